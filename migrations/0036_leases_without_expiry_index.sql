-- `run_leases` holds the runs in flight only: a row is inserted by a claim and deleted by the run's
-- completion, so the table stays as small as the workers' concurrency. Its index by expiry cost an
-- index entry (and its share of page splits) on every claim, about a twentieth of a drained run's
-- WAL, and made every heartbeat's update non-HOT, for the reaper alone. The reaper now reads the
-- table itself (reap-expired-leases.sql.ts): a scan of the runs in flight, a few times a second.

DROP INDEX run_leases_expiry_idx;
