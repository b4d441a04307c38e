import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Registry } from 'prom-client';
import {
  ADMIN_TOKEN_HASH,
  bearerToken,
  CONFIG,
  hashToken,
  isAdminTokenHash,
  METRICS_REGISTRY,
  type Config,
} from '@chronicle/platform';

/**
 * GET /metrics in the Prometheus text format: this process's registry (its counters, the scrape-time
 * gauges of the roles it runs, Node's process metrics). METRICS_AUTH=admin: the admin token only.
 */
@Controller()
export class MetricsController {
  constructor(
    @Inject(METRICS_REGISTRY) private readonly registry: Registry,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(ADMIN_TOKEN_HASH) private readonly adminTokenHash: string | null,
  ) {}

  @Get('metrics')
  async metrics(@Req() request: Request, @Res() response: Response): Promise<void> {
    if (this.config.metricsAuth === 'admin' && !this.isAdmin(request.headers.authorization)) {
      // Written here, not thrown to the API's ProblemDetailsFilter: the scheduler and the projector
      // serve /metrics too, and they run without the API's modules.
      response
        .status(401)
        .type('application/problem+json')
        .send(
          JSON.stringify({
            type: '/problems/unauthorized',
            title: 'unauthorized',
            status: 401,
            detail: 'METRICS_AUTH=admin: send Authorization: Bearer <the admin token>',
            instance: request.originalUrl,
          }),
        );
      return;
    }
    const text = await this.registry.metrics();
    response.status(200).type(this.registry.contentType).send(text);
  }

  private isAdmin(authorization: string | undefined): boolean {
    const token = bearerToken(authorization);
    return token !== undefined && isAdminTokenHash(hashToken(token), this.adminTokenHash);
  }
}
