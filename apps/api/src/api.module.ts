import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ProblemDetailsFilter } from '../../../libs/platform/src/http/problem-details.filter';
import type { JsonLogger } from '../../../libs/platform/src/logging/logger';
import { LOGGER } from '../../../libs/platform/src/runtime/tokens';

/** The REST /v1 API and the worker protocol. Every error leaves as RFC 9457 problem details. */
@Module({
  providers: [{ provide: APP_FILTER, inject: [LOGGER], useFactory: (logger: JsonLogger) => new ProblemDetailsFilter(logger.child('http')) }],
})
export class ApiModule {}
