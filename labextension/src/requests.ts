/**
 * Request sequencing, so a stale answer never replaces a newer one and a fast slider sends a bounded stream of
 * requests.
 */

import { Method } from './types';

export interface ITicket {
  seq: number;
  method: Method;
  /** the scenario revision the request was made for */
  revision: number;
}

/**
 * Numbers every request and decides whether an answer may be shown. An answer is dropped when a newer one has been
 * shown: one for a later scenario revision, or, for the same revision, a later request of the same method or a
 * simulation (an estimate never replaces the simulation of the same scenario).
 */
export class Sequencer {
  issue(method: Method, revision: number): ITicket {
    return { seq: ++this._seq, method, revision };
  }

  /** Whether the answer to this ticket may be shown; if so it becomes the newest shown. */
  accept(ticket: ITicket): boolean {
    if (!this.wanted(ticket)) {
      return false;
    }
    this._shown = ticket;
    return true;
  }

  /** Whether an answer to this ticket would still be shown (false: do not bother sending it). */
  wanted(ticket: ITicket): boolean {
    const shown = this._shown;
    if (!shown) {
      return true;
    }
    if (ticket.revision !== shown.revision) {
      return ticket.revision > shown.revision;
    }
    if (ticket.method === shown.method) {
      return ticket.seq > shown.seq;
    }
    return ticket.method === 'simulate';
  }

  get shown(): ITicket | null {
    return this._shown;
  }

  private _seq = 0;
  private _shown: ITicket | null = null;
}

/**
 * At most one request of a kind in flight; while one runs, only the newest of the requests made meanwhile waits,
 * and it is sent as soon as the running one ends (so a fast slider sends a bounded stream, always the latest).
 */
export class Coalescer<T> {
  constructor(private readonly _run: (item: T) => Promise<void>) {}

  push(item: T): void {
    if (this._busy) {
      this._pending = { item };
      return;
    }
    void this._start(item);
  }

  get busy(): boolean {
    return this._busy;
  }

  private async _start(item: T): Promise<void> {
    this._busy = true;
    try {
      await this._run(item);
    } catch {
      // the runner reports its own errors; the queue must go on
    } finally {
      this._busy = false;
      const next = this._pending;
      this._pending = null;
      if (next) {
        void this._start(next.item);
      }
    }
  }

  private _busy = false;
  private _pending: { item: T } | null = null;
}

/** Calls `fn` once `delayMs` after the last `schedule()`; `flush()` calls it now instead. */
export class Debouncer {
  constructor(
    private readonly _fn: () => void,
    private readonly _delayMs: number
  ) {}

  schedule(): void {
    this.cancel();
    this._timer = setTimeout(() => {
      this._timer = null;
      this._fn();
    }, this._delayMs);
  }

  flush(): void {
    this.cancel();
    this._fn();
  }

  cancel(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  get pending(): boolean {
    return this._timer !== null;
  }

  private _timer: ReturnType<typeof setTimeout> | null = null;
}
