#!/usr/bin/env python3
# trace-steps.py: where a whole-cluster barrier's time goes, from the hibard traces of an
# emulated cluster (HIBAR_TRACE_DIR=DIR; every daemon on this host, so their t0_ns share
# CLOCK_MONOTONIC). Usage: scripts/trace-steps.py DIR [--skip N] [--L N]
#
# For every collective (the first N, default 20, are warm-up), each protocol step is named by
# the tag hier gives it ("scmd I2", "tree U1", ...):
#   chassis step  own time = its last HWB_ARRIVE -> its last HWB_DONE (over every node of
#                 every chassis taking that step): T_IB plus waking the sleepers
#   message step  own time = its last SEND -> its last MSG received: T_SR
# Steps are listed in the order they end; "segment" is how much later than the step before
# it one ends (the waterfall; the segments add up to first arrival -> last completion).
# Then the barrier itself: last ARRIVE -> last COMPLETE, its distribution and a histogram.
# Then the work per barrier, to hold against the formulas: the chassis-barrier steps and the
# message steps on the critical path (the waterfall: scmd (4 + 3L) and 3(L + 1); with --L N
# the script checks them; tree's tags do not name the depth, so its levels merge), and every
# chassis round (HWB_ARRIVE, one per node and chassis step) and every SEND of the barrier
# (scmd-30: 69 and 27; tree: 57 and 18, every chassis gathers and every non-root one
# releases), with the number of barriers that did more or less than the most common count (a
# protocol doing extra work shows up here).
import collections
import glob
import re
import sys

LINE = re.compile(r'n(\d+) coll (\d+) (\S+)(.*?) ib=\d+ sr=\d+ t=(\S+)$')
HEAD = re.compile(r'node (\d+) .* t0_ns (\d+)')


def load(d):
    ev = collections.defaultdict(list)
    files = glob.glob(d + '/n*.trace')
    if not files:
        sys.exit('trace-steps: no n*.trace in %s' % d)
    for f in files:
        with open(f) as fh:
            lines = fh.read().splitlines()
        m = HEAD.search(lines[0]) if lines else None
        if m is None:
            sys.exit('trace-steps: %s: no t0_ns in the header (a hibard from before it)' % f)
        node, t0 = int(m.group(1)), int(m.group(2)) / 1e3
        for ln in lines[1:]:
            m = LINE.match(ln)
            if m:
                ev[int(m.group(2))].append((t0 + float(m.group(5)), node, m.group(3),
                                            m.group(4).strip()))
    return ev


def tag(rest):
    m = re.search(r'\[(\w+ \w+)\]', rest)
    return m.group(1) if m else '?'


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float('nan')


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: trace-steps.py DIR [--skip N] [--L N]')
    skip = int(sys.argv[sys.argv.index('--skip') + 1]) if '--skip' in sys.argv else 20
    want_L = int(sys.argv[sys.argv.index('--L') + 1]) if '--L' in sys.argv else None
    ev = load(sys.argv[1])
    own = collections.defaultdict(list)
    seg = collections.defaultdict(list)
    end_rel = collections.defaultdict(list)
    total, spread = [], []
    n_hwb_steps, n_msg_steps, n_arrive, n_send = [], [], [], []
    proto = set()
    for c in sorted(ev)[skip:]:
        es = sorted(ev[c])
        arr = [e[0] for e in es if e[2] == 'ARRIVE']
        done = [e[0] for e in es if e[2] == 'COMPLETE']
        if not arr or not done:
            continue
        start, end = {}, {}
        cur = {}      # node -> tag of its pending chassis step
        sent = {}     # (from, to, type) -> (time, tag)
        for t, n, k, rest in es:
            if k == 'HWB_ARRIVE':
                s = 'hwb ' + tag(rest)
                cur[n] = s
                start[s] = max(start.get(s, t), t)
            elif k == 'HWB_DONE' and n in cur:
                s = cur.pop(n)
                end[s] = max(end.get(s, t), t)
            elif k == 'SEND':
                m = re.match(r'(\w+) to n(\d+)', rest)
                if m:
                    sent[(n, int(m.group(2)), m.group(1))] = (t, tag(rest))
            elif k == 'MSG':
                m = re.match(r'(\w+) from n(\d+)', rest)
                if m and (int(m.group(2)), n, m.group(1)) in sent:
                    ts, tg = sent[(int(m.group(2)), n, m.group(1))]
                    s = 'msg %s %s' % (m.group(1), tg)
                    start[s] = max(start.get(s, ts), ts)
                    end[s] = max(end.get(s, t), t)
        t0 = min(arr)
        prev = t0
        n_hwb_steps.append(sum(1 for s in end if s.startswith('hwb ')))
        n_msg_steps.append(sum(1 for s in end if s.startswith('msg ')))
        n_arrive.append(sum(1 for e in es if e[2] == 'HWB_ARRIVE'))
        n_send.append(sum(1 for e in es if e[2] == 'SEND'))
        proto.update(s.split()[-2] for s in end)
        for s in sorted(end, key=lambda x: end[x]):
            own[s].append(end[s] - start[s])
            seg[s].append(end[s] - prev)
            end_rel[s].append(end[s] - t0)
            prev = end[s]
        seg['(last step -> last COMPLETE)'].append(max(done) - prev)
        total.append(max(done) - max(arr))
        spread.append(max(arr) - t0)
    if not total:
        sys.exit('trace-steps: no complete collective after the first %d' % skip)
    order = sorted(end_rel, key=lambda s: q(end_rel[s], .5))
    print('%d collectives; us; first ARRIVE -> last ARRIVE (the driver\'s fan-out): median '
          '%.0f, p90 %.0f' % (len(total), q(spread, .5), q(spread, .9)))
    print('%-26s %9s %9s %9s %9s %9s' % ('step', 'own med', 'own p90', 'own p99', 'seg med',
                                         'seg mean'))
    for s in order + ['(last step -> last COMPLETE)']:
        o = own.get(s, [])
        v = seg[s]
        ow = ['%9.0f' % q(o, p) if o else '%9s' % '-' for p in (.5, .9, .99)]
        print('%-26s %s %9.0f %9.0f' % (s, ' '.join(ow), q(v, .5), sum(v) / len(v)))
    print('barrier, last ARRIVE -> last COMPLETE: median %.0f, p90 %.0f, p99 %.0f, max %.0f'
          % (q(total, .5), q(total, .9), q(total, .99), max(total)))
    def mode(v):
        m = collections.Counter(v).most_common(1)[0][0]
        return m, sum(1 for x in v if x != m)
    (hs, hs_off), (ms, ms_off) = mode(n_hwb_steps), mode(n_msg_steps)
    (na, na_off), (ns, ns_off) = mode(n_arrive), mode(n_send)
    print('per barrier: %d chassis-barrier steps and %d message steps on the critical path '
          '(%d and %d barriers differ); %d chassis rounds (HWB_ARRIVE) and %d SENDs in all '
          '(%d and %d barriers differ)' % (hs, ms, hs_off, ms_off, na, ns, na_off, ns_off))
    bad = hs_off + ms_off + na_off + ns_off
    p = proto.pop() if len(proto) == 1 else None
    if want_L is not None and p == 'tree':
        print('tree: its step tags (G2, G3, D2, D3) do not name the depth, so the waterfall '
              'merges its levels; the step counts are not checked against (3 + 2L), 2(L + 1)')
    elif want_L is not None and p is not None:
        exp = (4 + 3 * want_L, 3 * (want_L + 1)) if p == 'scmd' else \
            (3 + 2 * want_L, 2 * (want_L + 1))
        ok = (hs, ms) == exp
        print('%s with L = %d: the formula counts %d chassis barriers and %d sends: %s'
              % (p, want_L, exp[0], exp[1], 'the same' if ok else 'DIFFERENT'))
        bad += not ok
    bins = [0, 1000, 2000, 3000, 4000, 5000, 6000, 8000, 10000, 20000, float('inf')]
    hist = [sum(1 for x in total if bins[i] <= x < bins[i + 1]) for i in range(len(bins) - 1)]
    print('histogram: ' + '  '.join('%g-%g: %d' % (bins[i] / 1e3, bins[i + 1] / 1e3, hist[i])
                                    for i in range(len(hist)) if hist[i]) + ' (ms)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
