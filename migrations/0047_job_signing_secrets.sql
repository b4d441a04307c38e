-- HTTP-target jobs' signing secrets (docs/api.md, "HTTP-target jobs"). Kept here, in the control database, and
-- never in the log: an event is kept for ever and shown to auditors. A job's current secret (retires_at null)
-- signs its calls; a rotated one signs them too until its retires_at, so that the receiver may move to the
-- new secret meanwhile. A job has one current secret at most.
CREATE TABLE job_signing_secrets (
  job text COLLATE "C" NOT NULL,
  secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  retires_at timestamptz,
  CONSTRAINT job_signing_secrets_pkey PRIMARY KEY (job, created_at)
);

CREATE UNIQUE INDEX job_signing_secrets_current_idx ON job_signing_secrets (job) WHERE retires_at IS NULL;
