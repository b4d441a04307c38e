import 'reflect-metadata';
import { runProcess } from '@chronicle/runtime';
import { ProjectorModule } from './projector.module';

void runProcess({ name: 'projector', modules: [ProjectorModule] });
