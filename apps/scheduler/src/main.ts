import 'reflect-metadata';
import { runProcess } from '../../../libs/platform/src/runtime/run-process';
import { SchedulerModule } from './scheduler.module';

void runProcess({ name: 'scheduler', modules: [SchedulerModule] });
