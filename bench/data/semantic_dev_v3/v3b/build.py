import json, random, hashlib
SRC = [("p_paraphrase.py","paraphrase","should_hit",100),("p_chatty.py","chatty","should_hit",70),
("p_reorder.py","reorder","should_hit",50),("p_convhit1.py","conversation_should_hit","should_hit",None),
("p_convhit2.py","conversation_should_hit","should_hit",None),("p_negation.py","negation","trap",45),
("p_entity.py","entity_swap","trap",50),("p_role.py","role_swap","trap",50),("p_quantity.py","quantity_scope","trap",50),
("p_compl.py","complementary","trap",45),("p_speech.py","speech_act","trap",50),("p_code.py","code_exact","trap",50),
("p_convtrap1.py","conversation_trap","trap",None),("p_convtrap2.py","conversation_trap","trap",None),
("p_x_paraphrase.py","paraphrase","should_hit",None),("p_x_chatty.py","chatty","should_hit",None),("p_x_reorder.py","reorder","should_hit",None),("p_x_convhit.py","conversation_should_hit","should_hit",None),("p_x_convtrap.py","conversation_trap","trap",None)]
from drops import DROP
EXPECT={"paraphrase":100,"chatty":70,"reorder":50,"conversation_should_hit":90,"negation":45,"entity_swap":50,"role_swap":50,"quantity_scope":50,"complementary":45,"speech_act":50,"code_exact":50,"conversation_trap":90}
def conv(lst):
    return [{"role": "user" if i%2==0 else "assistant", "content": c} for i,c in enumerate(lst)]
rows=[]
for f,cat,lab,_ in SRC:
    ns={}; exec(open(f).read(), ns)
    for a,b in ns["PAIRS"]:
        key=a[0] if isinstance(a,list) else a
        if key in DROP.get(f,()):
            DROP[f].remove(key); continue
        if cat.startswith("conversation"):
            assert isinstance(a,list) and isinstance(b,list)
            a,b=conv(a),conv(b)
        else:
            assert isinstance(a,str) and isinstance(b,str)
        rows.append({"category":cat,"label":lab,"a":a,"b":b})
assert all(not v for v in DROP.values()), DROP
random.Random(20261128).shuffle(rows)
out=[]
for i,r in enumerate(rows,1):
    out.append({"id":f"v3b-{i}","category":r["category"],"label":r["label"],"a":r["a"],"b":r["b"]})
with open("dev_v3b.jsonl","w") as fh:
    for r in out: fh.write(json.dumps(r,ensure_ascii=False)+"\n")
