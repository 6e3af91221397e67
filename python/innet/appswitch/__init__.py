"""The application switch's real-packet experiments (declared in crates/appswitch/src/experiments.rs,
each naming the function here that runs it): a real Cassandra (or Redis, memcached) in network namespaces (innet.netns)
with ``innet switch run`` between client and server.

- ``experiments``: Figs. 12, 15, 16, 18 (one client through a normal and an application switch)
  and 23 (pcap-replay throughput); ``passes``: Figs. 17 and 19 (passes of one workload through the
  switch's modes: connections per client, lexical analysis vs fixed layout); ``timeline``: Figs.
  13-14 (per-packet marks); ``cluster``: Fig. 22 (two Cassandra nodes);
- ``workload``, ``semantics``, ``history``: what runs in the client namespace (the workloads, the
  statement-semantics cases, the history check), ``python3 -m innet.appswitch.<module> ...``;
- ``cql_driver``: the fix the released Python driver needs under these workloads.
"""
