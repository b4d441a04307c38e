import 'reflect-metadata';
import { runProcess } from '../../../libs/platform/src/runtime/run-process';
import { ApiModule } from './api.module';
import { setupOpenApi } from './openapi';

void runProcess({ name: 'api', modules: [ApiModule], configure: setupOpenApi });
