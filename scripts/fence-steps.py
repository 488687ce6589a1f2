#!/usr/bin/env python3
# fence-steps.py: where a PMIx fence's time goes under hibar, from a fence-compare run with
# profiling on (every host's clock is the machine's CLOCK_MONOTONIC, so all times compare):
#   FENCE_COMPARE_LOGS=DIR HIBAR_FENCE_PROF=1 FENCE_CLIENT_PROF=1 tests/netns/testbed ... -- \
#       tests/netns/fence-compare --impls hibar ...
#   scripts/fence-steps.py DIR [--ppn 4] [--size 1024] [--first]
# DIR holds the daemons' logs (fprof NODE STAGE COLL T_NS lines, hbd_fence_prof) and each job's
# output (job-IMPL-SIZE-K.out: tfence RANK IT T0_NS T1_NS lines of fence_client). Rank r runs
# on node r // ppn (hibar-run -N ppn places by block).
# For every steady-state fence (IT >= 0; with --first: each job's first fence with data, IT
# -2, after the aligning fence without data, IT -3; the sync check's two fences, tsync lines, are
# counted in the order the fences ran and not shown), times are taken from the moment the last
# rank called PMIx_Fence ("last call" = 0); per step the table gives, over the fences, the
# median of the earliest node, of the median node and of the latest node reaching it, and when
# the node of the last caller reaches it ("lastnode"; us). Steps:
#   call        a rank calls PMIx_Fence (its node's last rank; "first call" = the earliest rank)
#   st_up       libpmix's thread in the job's PMIx step calls fence_nb (the node's contribution)
#   upcall      hibard reads it from the step's socket
#   loop        hibard's event loop takes it (the hand-off between the two threads)
#   send_up     the node's blob (its subtree's) goes to its parent; release: the root has all
#   rx_up       the root received a child's blob (per child)
#   sent        the root queued the release on every edge
#   rx_down     a node received the release
#   done/mcb    hibard completes the fence / sends the result to the step
#   st_rx       the step has it and calls libpmix's modex callback
#   ret         a rank's PMIx_Fence returned (its node's last rank)
import collections
import glob
import os
import re
import statistics
import sys

FPROF = re.compile(r'fprof (\d+) (\S+) ([0-9a-f]+) (\d+)$')
TF = re.compile(r'tfence (\d+) (-?\d+) (\d+) (\d+)$')
TS = re.compile(r'tsync (\d+) (\d+) (\d+) (\d+)$')  # fence_client --sync-check: RANK K T0 T1


def med(v):
    return statistics.median(v) if v else float('nan')


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit('usage: fence-steps.py DIR [--ppn N] [--size B] [--first]')
    d = args[0]
    ppn = int(args[args.index('--ppn') + 1]) if '--ppn' in args else 4
    want = args[args.index('--size') + 1] if '--size' in args else None
    first = '--first' in args  # the job's first fence with data (IT -2) instead
    ev = collections.defaultdict(list)  # node -> [(t_us, stage)]
    for f in glob.glob(os.path.join(d, '*.log')):
        for ln in open(f, errors='replace'):
            m = FPROF.search(ln.strip())
            if m:
                ev[int(m.group(1))].append((int(m.group(4)) / 1e3, m.group(2)))
    for n in ev:
        ev[n].sort()
    jobs = sorted(glob.glob(os.path.join(d, 'job-hibar*-*.out')))
    rows = collections.defaultdict(list)  # step -> [(min, med, max) per fence]
    rows_last = collections.defaultdict(list)  # step -> [the last caller's node, per fence]
    cycle = []
    for jf in jobs:
        size = jf.rsplit('-', 2)[-2]
        if want is not None and size != want:
            continue
        tf = collections.defaultdict(dict)  # it -> rank -> (t0, t1)
        for ln in open(jf, errors='replace'):
            m = TF.match(ln.strip())
            if m:
                tf[int(m.group(2))][int(m.group(1))] = (int(m.group(3)) / 1e3, int(m.group(4)) / 1e3)
            m = TS.match(ln.strip())
            if m:  # the sync check's fences (IT -10 - K): counted, never shown
                tf[-10 - int(m.group(2))][int(m.group(1))] = (int(m.group(3)) / 1e3,
                                                              int(m.group(4)) / 1e3)
        if not tf or -1 not in tf:
            continue
        # in the order the fences ran, as the daemons' events are cut into fences
        its = sorted(tf, key=lambda it: min(t0 for t0, _ in tf[it].values()))
        start = min(t0 for t0, _ in tf[its[0]].values())
        end = max(t1 for _, t1 in tf[its[-1]].values())
        # per node: its fprof events inside the job, cut into fences at each "upcall"
        per = {}
        for n, lst in ev.items():
            fences, cur = [], None
            # a fence starts at its step's upcall (st_up) where the step profiles, else hibard's
            cut = 'st_up' if any(st == 'st_up' for _, st in lst) else 'upcall'
            for t, st in lst:
                if t < start - 1 or t > end + 1:
                    continue
                if st == cut:
                    cur = collections.defaultdict(list)
                    fences.append(cur)
                if cur is not None:
                    cur[st].append(t)
            per[n] = fences
        for k, it in enumerate(its):
            if (it != -2) if first else (it < 0):
                continue
            ranks = tf[it]
            t_last = max(t0 for t0, _ in ranks.values())
            steps = collections.defaultdict(list)
            steps['first call'].append(min(t0 for t0, _ in ranks.values()))
            nodes = collections.defaultdict(list)
            for r, (t0, t1) in ranks.items():
                nodes[r // ppn].append((t0, t1))
            last = max(ranks, key=lambda r: ranks[r][0]) // ppn  # the last caller's node
            at_last = {}
            for n, l in nodes.items():
                steps['call'].append(max(t0 for t0, _ in l))
                steps['ret'].append(max(t1 for _, t1 in l))
                steps['ret first'].append(min(t1 for _, t1 in l))
                if n == last:
                    at_last.update({'call': steps['call'][-1], 'ret': steps['ret'][-1],
                                    'ret first': steps['ret first'][-1]})
            for n, fences in per.items():
                if k >= len(fences):
                    continue
                for st, ts in fences[k].items():
                    if st in ('rx_up', 'rx_up0'):
                        steps[st] += ts
                    else:
                        steps[st].append(ts[0])
                        if n == last:
                            at_last[st] = ts[0]
            cycle.append(ranks.get(0, (0, 0))[1] - ranks.get(0, (0, 0))[0])
            for st, ts in steps.items():
                ts = sorted(t - t_last for t in ts)
                rows[st].append((ts[0], med(ts), ts[-1]))
            for st, t in at_last.items():
                rows_last[st].append(t - t_last)
    if not rows:
        sys.exit('fence-steps: no profiled hibar fences in %s' % d)
    order = ['first call', 'call', 'st_up', 'upcall', 'loop', 'send_up', 'rx_up0', 'rx_up',
             'release', 'sent', 'rx_down0', 'rx_down', 'done', 'mcb', 'st_rx', 'ret first', 'ret']
    print('# %d fences; rank 0 call-to-return median %.0f us; times from the last call (us)' %
          (len(cycle), med(cycle)))
    print('%-11s %9s %9s %9s %9s %6s' % ('step', 'earliest', 'median', 'latest', 'lastnode', 'n'))
    for st in order + sorted(set(rows) - set(order)):
        if st not in rows:
            continue
        r = rows[st]
        print('%-11s %9.0f %9.0f %9.0f %9.0f %6d' %
              (st, med([x[0] for x in r]), med([x[1] for x in r]), med([x[2] for x in r]),
               med(rows_last[st]), len(r)))


if __name__ == '__main__':
    main()
