import { Module } from '@nestjs/common';
import { AuthGuard } from './auth.guard';
import { FailedAuthLimiter } from './failed-auth-limiter';

/** The bearer-token check for REST and GraphQL, and the one count of failed authentications they share. */
@Module({ providers: [AuthGuard, FailedAuthLimiter], exports: [AuthGuard, FailedAuthLimiter] })
export class AuthModule {}
