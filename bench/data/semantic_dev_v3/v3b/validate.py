import json, collections, sys
EXPECT={"paraphrase":("should_hit",100),"chatty":("should_hit",70),"reorder":("should_hit",50),"conversation_should_hit":("should_hit",90),"negation":("trap",45),"entity_swap":("trap",50),"role_swap":("trap",50),"quantity_scope":("trap",50),"complementary":("trap",45),"speech_act":("trap",50),"code_exact":("trap",50),"conversation_trap":("trap",90)}
ids=set(); seen=set(); cnt=collections.Counter(); texts=collections.Counter(); errs=[]
def norm(x): return json.dumps(x,sort_keys=True).lower()
for n,line in enumerate(open("dev_v3b.jsonl"),1):
    r=json.loads(line)
    assert set(r)=={"id","category","label","a","b"}, r
    if r["id"] in ids: errs.append(("dupid",r["id"]))
    ids.add(r["id"])
    lab,_=EXPECT[r["category"]]
    if r["label"]!=lab: errs.append(("label",r["id"]))
    cnt[r["category"]]+=1
    a,b=r["a"],r["b"]
    if r["category"].startswith("conversation"):
        for c in (a,b):
            if not (isinstance(c,list) and 2<=len(c)<=6): errs.append(("convlen",r["id"],len(c)))
            for i,m in enumerate(c):
                if set(m)!={"role","content"} or m["role"]!=("user" if i%2==0 else "assistant") or not m["content"].strip(): errs.append(("role",r["id"]))
            if c[-1]["role"]!="user": errs.append(("last",r["id"]))
        if a==b: errs.append(("same",r["id"]))
    else:
        if not (isinstance(a,str) and isinstance(b,str)): errs.append(("type",r["id"]))
        if a.strip()==b.strip(): errs.append(("same",r["id"]))
        if a.strip().lower()==b.strip().lower(): print("case-only diff:", r["id"], a, "|", b)
        texts[a.strip().lower()]+=1; texts[b.strip().lower()]+=1
    k=tuple(sorted([norm(a),norm(b)]))
    if k in seen: errs.append(("duppair",r["id"]))
    seen.add(k)
for c,(l,e) in EXPECT.items():
    if cnt[c]!=e: errs.append(("count",c,cnt[c],e))
for t,c in texts.items():
    if c>1: print("repeated text:",c,t)
print(dict(cnt), sum(cnt.values()))
print("ERRORS:",errs if errs else "none")
sys.exit(1 if errs else 0)
