import { apiClient, type ApiClient } from './api-client';

export interface TeamClients {
  readonly team: ApiClient;
  readonly worker: ApiClient;
  readonly teamToken: string;
  readonly workerToken: string;
  /** What events name the team token by: their actor is `team:<team>:token:<this>`. */
  readonly teamActor: string;
}

/** As an operator would: the admin creates a team and issues its team and worker tokens for the queues. */
export async function createTeam(
  baseUrl: string,
  adminToken: string,
  teamId: string,
  queues: readonly string[],
): Promise<TeamClients> {
  const admin = apiClient(baseUrl, adminToken);
  const created = await admin.post('/v1/teams', { id: teamId });
  if (created.status !== 201) throw new Error(`team ${teamId} not created: ${created.status}`);
  const issue = async (kind: 'team' | 'worker'): Promise<{ token: string; id: string }> => {
    const response = await admin.post<{ token: string; id: string }>(`/v1/teams/${teamId}/tokens`, { kind, queues });
    if (response.status !== 201) throw new Error(`${kind} token not issued: ${response.status}`);
    return response.body;
  };
  const teamToken = await issue('team');
  const workerToken = (await issue('worker')).token;
  return {
    team: apiClient(baseUrl, teamToken.token),
    worker: apiClient(baseUrl, workerToken),
    teamToken: teamToken.token,
    workerToken,
    teamActor: `team:${teamId}:token:${teamToken.id}`,
  };
}
