import 'reflect-metadata';
import { runProcess } from '@chronicle/runtime';
import { ApiModule } from './api.module';
import { configureApi } from './configure-api';

void runProcess({ name: 'api', modules: [ApiModule], configure: configureApi });
