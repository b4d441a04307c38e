import 'reflect-metadata';
import { runProcess } from '@chronicle/runtime';
import { SchedulerModule } from './scheduler.module';

void runProcess({ name: 'scheduler', modules: [SchedulerModule] });
