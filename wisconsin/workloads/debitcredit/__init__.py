"""DebitCredit: the OLTP-scaleup workload (Tandem 1987; Gray & Levine 2005).

Modules: `schema` (sizing, tables, build), `transaction` (the SQL of one transaction and its
remote half), `server` (one process per partition: its DuckDB file, its terminals, the peer
port), `driver` (terminals: closed streams and open arrivals), `histogram` (latency),
`coordinator` (starts the partition processes and runs steps), `audit` (recovery, invariants,
the driver's log against the files), `metrics` (tps by the rule, scaleup), `runfile`,
`report`, `plot`, `bench` (the one-command experiment).
"""
