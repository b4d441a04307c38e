import 'reflect-metadata';
import { runProcess } from '@chronicle/runtime';
import { ApiModule } from './api.module';
import { setupOpenApi } from './openapi';

void runProcess({ name: 'api', modules: [ApiModule], configure: setupOpenApi });
