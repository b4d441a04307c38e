import 'reflect-metadata';
import { runProcess } from '../../../libs/platform/src/runtime/run-process';
import { ProjectorModule } from './projector.module';

void runProcess({ name: 'projector', modules: [ProjectorModule] });
