-- The materialiser's progress per scheduled job: the nominal time up to which
-- its runs are in the log. Scheduler state, not a read model: written in the
-- same transaction as the runs it covers, so a restart neither loses nor
-- doubles a run (run ids derive from job and nominal time besides).
CREATE TABLE schedule_cursors (
  job                  text COLLATE "C" PRIMARY KEY,
  materialised_through timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL DEFAULT now()
);
