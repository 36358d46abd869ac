/**
 * Server errors: the error of a failed request, put in words and mapped to the control it names, and whether
 * to ask again.
 */

import { IServerError } from './types';

/** A refused or failed request, carrying the server's error object. */
export class HwsimApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: IServerError
  ) {
    super(error.message);
  }
}

/** The error object of whatever a request threw. */
export function toServerError(reason: unknown): IServerError {
  if (reason instanceof HwsimApiError) {
    return reason.error;
  }
  return { message: String(reason instanceof Error ? reason.message : reason) };
}

/** The control an error belongs next to, or null to show it at the top (body, seed, steps, hidden fields). */
export function errorTarget(error: IServerError, shown: string[]): string | null {
  return error.field && shown.includes(error.field) ? error.field : null;
}

/** The error in words, as the server put it; a bare field/value/accepted triple is worded here. */
export function errorText(error: IServerError): string {
  if (error.message) {
    return error.message;
  }
  const what = error.field ? `${error.field}=${error.value ?? '?'} is not accepted` : 'the request was refused';
  return error.accepted ? `${what}: ${error.accepted}` : what;
}

/** The error of a failed answer, whatever its body holds. */
export function errorFromResponse(status: number, body: string): IServerError {
  try {
    // any JSON value: property access on a number, string or boolean gives undefined, like a missing key
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown } | null;
    const error = parsed?.error;
    if (error && typeof error === 'object') {
      const e = error as IServerError;
      return { ...e, message: errorText(e) };
    }
    if (typeof parsed?.message === 'string' && parsed.message) {
      return { message: `the server answered ${status}: ${parsed.message}` };
    }
  } catch {
    // not JSON: fall through to the status
  }
  if (status === 404) {
    return {
      message:
        'the jupyter_hwsim server extension is not answering (404): enable it with ' +
        '`jupyter server extension enable jupyter_hwsim` and restart JupyterLab'
    };
  }
  if (status === 403) {
    return { message: 'the server refused the request (403): reload the page to log in again' };
  }
  return { message: `the server answered ${status}${body ? ': ' + body.slice(0, 200) : ''}` };
}

/** A failure that may pass by itself: no answer (0), the server busy (503) or too slow (504). */
export function isTransient(status: number): boolean {
  return status === 0 || status === 503 || status === 504;
}

/** Ask again after a busy (503) or timed-out (504) answer, at most `max` times for one scenario. */
export function shouldRetry(status: number, attempts: number, max = 2): boolean {
  return (status === 503 || status === 504) && attempts < max;
}
