-- Tokens with a lifecycle: an expiry given at issue, a revocation, and when each was last used
-- (written at most every few seconds per token and API process, when its caller is looked up).
ALTER TABLE api_tokens
  ADD COLUMN expires_at   timestamptz,
  ADD COLUMN revoked_at   timestamptz,
  ADD COLUMN last_used_at timestamptz;
-- A team's tokens, listed by the admin or the team.
CREATE INDEX api_tokens_team_idx ON api_tokens (team, created_at);
