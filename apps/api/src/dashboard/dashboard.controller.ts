import {
  Controller,
  Get,
  Inject,
  NotFoundException,
  Param,
  Req,
  Res,
  ServiceUnavailableException,
} from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { resolveDashboardPath, type DashboardFile } from './dashboard-files';

export const DASHBOARD_FILES = Symbol('DASHBOARD_FILES');

/**
 * Everything the page loads comes from this server: scripts and styles only from files of the build
 * (no inline script, no CDN), data only from this origin (POST /graphql), no frames, no forms posted
 * elsewhere.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * GET /dashboard: the operators' page, built by Vite into dist/dashboard and served from memory.
 * The page reads everything through the GraphQL API with the token it is signed in with; serving it
 * needs no token.
 */
@ApiExcludeController()
@Controller('dashboard')
export class DashboardController {
  constructor(@Inject(DASHBOARD_FILES) private readonly files: ReadonlyMap<string, DashboardFile> | null) {}

  @Get()
  page(@Req() request: Request, @Res() response: Response): void {
    this.send(request, response, 'index.html');
  }

  @Get('*path')
  file(@Param('path') segments: string[], @Req() request: Request, @Res() response: Response): void {
    this.send(request, response, segments.join('/'));
  }

  private send(request: Request, response: Response, requested: string): void {
    if (this.files === null)
      throw new ServiceUnavailableException('the dashboard is not built: `npm run build` builds it');
    const file = resolveDashboardPath(this.files, requested);
    if (file === undefined) throw new NotFoundException(`no file ${requested} in the dashboard`);
    response.setHeader('Content-Security-Policy', DASHBOARD_CSP);
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.setHeader('Referrer-Policy', 'no-referrer');
    response.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    response.setHeader('Cache-Control', file.cacheControl);
    response.setHeader('ETag', file.etag);
    response.setHeader('Vary', 'Accept-Encoding');
    response.setHeader('Content-Type', file.contentType);
    if (request.headers['if-none-match'] === file.etag) {
      response.status(304).end();
      return;
    }
    const gzip = file.gzipped !== undefined && /\bgzip\b/.test(request.headers['accept-encoding'] ?? '');
    if (gzip) response.setHeader('Content-Encoding', 'gzip');
    response.status(200).end(gzip ? file.gzipped : file.body);
  }
}
