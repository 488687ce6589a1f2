#!/usr/bin/env python3
# coll-steps.py: where a libhibar collective's time goes across the daemons, from a
# client-compare run with profiling on (the bed's hosts share CLOCK_MONOTONIC, so all times
# compare):
#   HIBAR_CC_LOGS=DIR HIBAR_COLL_PROF=1 HIBAR_BENCH_PROF=1 [HIBAR_FENCE_PROF=1] \
#       hibar-bench scatter --ranks 4 --per-node 1 --sizes 4K
#   scripts/coll-steps.py DIR [--ppn 1] [--op scatter] [--size 4096]
# DIR holds the daemons' logs (cprof / fprof NODE STAGE ID T_NS lines: core/hbd_prof.h) and
# hibar's run output (hibar.out: "tbench RANK OP SIZE IT BARRIER_CALL OP_CALL OP_RETURN" of
# hibar-lib-bench, us). Rank r runs on node r // ppn (hibar-run -N ppn places by block).
# For every timed repetition the times are taken from the moment its first rank called the
# operation (0); per step and node the table gives the median over the repetitions (us), and
# the count of repetitions whose slowest rank (the one the maximum method reports) was there.
# Steps, in order:
#   bar_call      the rank calls the isolating barrier
#   bar_ring      its node's daemon takes the barrier epoch (the node's last rank's doorbell)
#   bar_release   the daemon releases the barrier epoch
#   call          the rank calls the operation (its node's first rank)
#   ring          the daemon takes the collective's epoch (doorbell read)
#   read          the node's input is read (root) and its agreement blob made
#   start         the data run starts (hbd_coll: the node's first sends go out)
#   tx / rx       the node sends / receives a data segment (first and last)
#   send_up ...   the agreement's fence steps (HIBAR_FENCE_PROF: hbd_fence.c): a node's blob
#                 goes up, the root has the last child's (rx_up), releases and has sent the
#                 concatenation down (release_f, sent), a node has it (rx_down)
#   done          the data run is over on the node
#   data          the output is written into the ranks (or there is none)
#   agreed        the agreement's verdict is known on the node
#   release       the daemon releases the epoch to the ranks
#   return        the rank's call returns (its node's last rank)
import collections
import glob
import os
import re
import statistics
import sys

PROF = re.compile(r'([cf])prof (\d+) (\S+) ([0-9a-f]+) (\d+)$')
TB = re.compile(r'tbench (\d+) (\S+) (\d+) (\d+) ([0-9.]+) ([0-9.]+) ([0-9.]+)$')
ORDER = ['bar_call', 'bar_ring', 'bar_release', 'call', 'ring', 'read', 'start', 'tx0', 'tx1',
         'rx0', 'rx1', 'send_up', 'rx_up', 'release_f', 'sent', 'rx_down', 'done', 'data',
         'agreed', 'release', 'return']


def opt(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit('usage: coll-steps.py DIR [--ppn N] [--op OP] [--size B]')
    d = args[0]
    ppn = int(opt(args, '--ppn', '1'))
    want_op = opt(args, '--op', None)
    want_size = opt(args, '--size', None)
    ev = collections.defaultdict(list)  # node -> [(t_us, kind, stage, id)]
    for f in glob.glob(os.path.join(d, '*.log')):
        for ln in open(f, errors='replace'):
            m = PROF.search(ln.strip())
            if m:
                ev[int(m.group(2))].append((int(m.group(5)) / 1e3, m.group(1), m.group(3),
                                            int(m.group(4), 16)))
    for n in ev:
        ev[n].sort()
    reps = collections.defaultdict(dict)  # (op, size, it) -> rank -> (tb, t0, t1)
    for ln in open(os.path.join(d, 'hibar.out'), errors='replace'):
        m = TB.search(ln.strip())
        if not m:
            continue
        op, size = m.group(2), m.group(3)
        if (want_op and op != want_op) or (want_size and size != want_size):
            continue
        reps[(op, size, int(m.group(4)))][int(m.group(1))] = tuple(
            float(m.group(i)) for i in (5, 6, 7))
    if not reps:
        sys.exit('coll-steps.py: no tbench lines (HIBAR_BENCH_PROF=1) in %s/hibar.out' % d)
    nodes = sorted(ev)
    table = collections.defaultdict(list)  # (step, node) -> [t]
    slowest = collections.Counter()
    total = []
    for key in sorted(reps):
        rk = reps[key]
        t_first = min(v[1] for v in rk.values())
        t_end = max(v[2] for v in rk.values())
        worst = max(rk, key=lambda r: rk[r][2] - rk[r][1])
        slowest[worst // ppn] += 1
        total.append(rk[worst][2] - rk[worst][1])
        for node in nodes:
            mine = [rk[r] for r in rk if r // ppn == node]
            if not mine:
                continue
            steps = {'bar_call': max(v[0] for v in mine), 'call': min(v[1] for v in mine),
                     'return': max(v[2] for v in mine)}
            lo, hi = max(v[0] for v in mine), t_end + 1.0
            # the daemon's steps between this node's barrier call and the repetition's end; the
            # epoch's own steps (ids: the epoch) after the first barrier and collective rings
            # there: a release can be logged after the rank it woke has gone on (it preempted
            # the daemon), so a line is matched by its epoch, not by its place in time
            win = [e for e in ev[node] if lo - 1.0 <= e[0] <= hi]
            bar = next((e[3] for e in win if e[1] == 'c' and e[2] == 'ring_bar'), None)
            col = next((e[3] for e in win if e[1] == 'c' and e[2] == 'ring'), None)
            for t, kind, stage, i in ev[node]:
                if kind == 'c' and stage in ('ring_bar', 'release_bar'):
                    if i == bar and t >= lo - 1.0:
                        steps.setdefault('bar_' + stage.split('_')[0], t)
                    continue
                if kind == 'c' and stage in ('ring', 'read', 'data', 'agreed', 'release'):
                    if i == col and t >= lo - 1.0:
                        steps.setdefault(stage, t)
                    continue
                if t < lo - 1.0 or t > hi:
                    continue
                if kind == 'c' and stage in ('tx', 'rx'):
                    steps.setdefault(stage + '0', t)  # the first one
                    steps[stage + '1'] = t  # the last one
                    continue
                if kind == 'f' and stage in ('rx_up0', 'rx_down0', 'done', 'mcb', 'upcall',
                                             'loop'):
                    continue
                if kind == 'f' and stage == 'rx_up':
                    steps['rx_up'] = t  # the last child's
                    continue
                name = 'release_f' if kind == 'f' and stage == 'release' else stage
                steps.setdefault(name, t)
            for s, t in steps.items():
                table[(s, node)].append(t - t_first)
    print('# %d repetitions; median over them of each step, us from the first rank\'s call'
          % len(total))
    print('# repetition (maximum over ranks): median %.1f us; slowest rank on node: %s'
          % (statistics.median(total), ', '.join('%d: %d' % kv for kv in sorted(slowest.items()))))
    print('%-12s' % 'step' + ''.join('%10s' % ('node %d' % n) for n in nodes))
    for s in ORDER:
        row = [table.get((s, n)) for n in nodes]
        if not any(row):
            continue
        print('%-12s' % s + ''.join('%10.1f' % statistics.median(v) if v else '%10s' % '-'
                                    for v in row))


if __name__ == '__main__':
    main()
