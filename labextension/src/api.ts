import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { errorFromResponse, HwsimApiError } from './errors';
import { ICatalog, IResult, Method, Scenario } from './types';

export { HwsimApiError };

/** The jupyter_hwsim REST API (jupyter_hwsim/server.py); settings carry the token and XSRF cookie. */
export class HwsimApi {
  constructor(private readonly _settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  catalog(): Promise<ICatalog> {
    return this._request<ICatalog>('catalog', { method: 'GET' });
  }

  /** The estimate (closed form) or the simulation of a scenario, with its charts. */
  compute(
    method: Method,
    scenario: Scenario,
    seed = 0,
    suggest = method === 'simulate',
    signal?: AbortSignal
  ): Promise<IResult> {
    const query = method === 'simulate' ? `?seed=${seed}&suggest=${suggest ? 1 : 0}` : '';
    return this._request<IResult>(method + query, {
      method: 'POST',
      body: JSON.stringify(scenario),
      signal
    });
  }

  /** The simulated timeline of a scenario as a Chrome/Perfetto trace (JSON). */
  trace(scenario: Scenario, seed = 0): Promise<{ [key: string]: unknown }> {
    return this._request(`trace?seed=${seed}`, { method: 'POST', body: JSON.stringify(scenario) });
  }

  private async _request<T>(path: string, init: RequestInit): Promise<T> {
    const url = URLExt.join(this._settings.baseUrl, 'hwsim', 'api', path);
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, init, this._settings);
    } catch (reason) {
      throw new HwsimApiError(0, {
        message: `the Jupyter server cannot be reached (${String(reason)})`
      });
    }
    const text = await response.text();
    if (!response.ok) {
      throw new HwsimApiError(response.status, errorFromResponse(response.status, text));
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new HwsimApiError(response.status, {
        message: `the server's answer is not JSON: ${text.slice(0, 200)}`
      });
    }
  }
}
