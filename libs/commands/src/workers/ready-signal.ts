import { Injectable } from '@nestjs/common';
import { WakeSignal } from '@chronicle/platform';

/**
 * Wakes long-polling lease requests of this process when runs become ready
 * here (enqueue, retry, replay). Other processes' runs are found by the
 * long-poll's timer at the next due time and its short fallback poll.
 */
@Injectable()
export class ReadySignal extends WakeSignal {}
