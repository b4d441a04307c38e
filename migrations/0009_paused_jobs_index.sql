-- The claim leaves out the runs of paused jobs: it reads the few paused
-- jobs from this index instead of scanning every job (50,000 scheduled
-- jobs would otherwise be read on every claim).
CREATE INDEX jobs_paused_idx ON jobs (name) WHERE paused;
