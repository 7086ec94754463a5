"""What agent-scoped keys and declared key context cost on a cache.wrap hit.

Side by side in one run, on one SQLite file, rounds interleaved, medians of per-hit times:

* ``python``        ``Cache.wrap`` from Python (the floor: no agent, no prefix, no context)
* ``agent_shared``  an agent node ``cache.wrap`` with ``key_prefix: false`` over an action that
                    declares no context (the agent's own overhead: templates, state, the node)
* ``agent_scoped``  the same node with the agent prefix (``cache:{agent}:{action}:{hash}``)
* ``agent_llm``     ``cache.wrap`` over ``llm.call``: prefix plus the declared context (model,
                    server and request fields resolved from settings and the environment)
* ``agent_llm_key`` the same under a custom ``key:``: the context is checked against the entry's

Writes bench/results/agents.md. ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from actioncache import Cache  # noqa: E402
from actioncache.agents import load_agent  # noqa: E402

NODE = "nodes:\n  - {{name: w, uses: cache.wrap, with: {with_}, output: r}}\n"
CASES = {
    "agent_shared": ("name: b\n", "{action: demo.echo, key_prefix: false, args: {prompt: '{{ state.p }}'}}"),
    "agent_scoped": ("name: b\n", "{action: demo.echo, args: {prompt: '{{ state.p }}'}}"),
    "agent_llm": ("name: b\nsettings: {llm: {model: m, base_url: 'http://127.0.0.1:9/v1', temperature: 0}}\n",
                  "{action: llm.call, args: {prompt: '{{ state.p }}'}}"),
    "agent_llm_key": ("name: b\nsettings: {llm: {model: m, base_url: 'http://127.0.0.1:9/v1', temperature: 0}}\n",
                      "{action: llm.call, key: 'k-{{ state.p }}', args: {prompt: '{{ state.p }}'}}"),
}


def echo(state, prompt):
    return {"content": prompt}


def time_hits(run, n: int) -> float:
    """Median seconds per hit over ``n`` hits."""
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, n = (3, 200) if args.quick else (7, 2000)
    workdir = Path(tempfile.mkdtemp(prefix="bench-agents-"))
    url = f"sqlite:///{workdir}/bench.db"
    os.environ.pop("OPENAI_BASE_URL", None)
    runners = {}
    cache = Cache(url)
    cache.wrap("demo.echo", lambda prompt: {"content": prompt}, {"prompt": "x"})
    runners["python"] = lambda: cache.wrap("demo.echo", lambda prompt: {"content": prompt}, {"prompt": "x"})
    agents = []
    for name, (header, with_) in CASES.items():
        path = workdir / f"{name}.yaml"
        path.write_text(header + NODE.format(with_=with_))
        agent = load_agent(path, store=url, actions={"demo.echo": echo})
        agents.append(agent)
        if "llm" in name:  # seed the entry: no model runs here, so store the answer the hit returns
            agent.registry["llm.call"] = _seeded(agent.registry["llm.call"])
        first = agent.invoke({"p": "x"})["r"]
        assert first["success"], first
        assert agent.invoke({"p": "x"})["r"]["_cache_hit"] is True, name
        runners[name] = (lambda a: lambda: a.invoke({"p": "x"}))(agent)
    results: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):  # interleaved: machine noise hits every case alike
        for name, run in runners.items():
            results[name].append(time_hits(run, n))
    medians = {name: statistics.median(values) for name, values in results.items()}
    floor = medians["agent_shared"]
    lines = ["# Agent cache.wrap hits: the cost of agent-scoped keys and declared key context", "",
             f"{rounds} interleaved rounds x {n} hits on one SQLite file; medians of per-hit medians. "
             "Ratios are against `agent_shared` (the same agent node without the prefix or a context).", "",
             "| case | µs per hit | vs agent_shared |", "|---|---:|---:|"]
    for name, value in medians.items():
        lines.append(f"| {name} | {value * 1e6:.1f} | {value / floor:.2f}x |")
    lines += ["", "Machine: 2 cores shared with other work while measured; compare ratios, not absolute times.",
              f"Command: `python bench/bench_agents.py{' --quick' if args.quick else ''}`", ""]
    out = ROOT / "bench" / "results" / "agents.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    for agent in agents:
        agent.close()
    cache.close()


def _seeded(fn):
    """llm.call as registered (same declared context), answering locally: no server in a benchmark."""
    from actioncache.agents import declare_key_context
    from actioncache.agents.key_context import key_context_of

    def call(state, **kwargs):
        return {"success": True, "content": kwargs.get("prompt"), "model": "m"}

    return declare_key_context(call, lambda args: key_context_of(fn, args))


if __name__ == "__main__":
    main()
