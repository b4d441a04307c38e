import { Module } from '@nestjs/common';
import { AuthGuard } from './auth.guard';

/** The bearer-token check, one instance (and one cache of known tokens) for REST and GraphQL. */
@Module({ providers: [AuthGuard], exports: [AuthGuard] })
export class AuthModule {}
