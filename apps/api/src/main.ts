import 'reflect-metadata';
import { runProcess } from '../../../libs/platform/src/runtime/run-process';
import { ApiModule } from './api.module';

void runProcess({ name: 'api', modules: [ApiModule] });
