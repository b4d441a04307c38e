import { apiClient, type ApiClient } from './api-client';

export interface TeamClients {
  readonly team: ApiClient;
  readonly worker: ApiClient;
  readonly teamToken: string;
  readonly workerToken: string;
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
  const issue = async (kind: 'team' | 'worker'): Promise<string> => {
    const response = await admin.post<{ token: string }>(`/v1/teams/${teamId}/tokens`, { kind, queues });
    if (response.status !== 201) throw new Error(`${kind} token not issued: ${response.status}`);
    return response.body.token;
  };
  const teamToken = await issue('team');
  const workerToken = await issue('worker');
  return { team: apiClient(baseUrl, teamToken), worker: apiClient(baseUrl, workerToken), teamToken, workerToken };
}
