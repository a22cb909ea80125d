/**
 * A browser played with plain HTTP requests (fetch, no redirect followed by itself): its cookie
 * handling, enough for sign-in flows (cookies by origin, name and path prefix; Max-Age=0 deletes), and
 * redirects followed hop by hop. Cookie attributes (Secure, SameSite) are kept for tests to read, not
 * enforced: test/console-browser.test.ts drives a real browser.
 */
export interface StoredCookie {
  value: string;
  path: string;
  attributes: string;
}

/** A browser's cookie handling, enough for this flow: cookies by origin, name and path prefix; Max-Age=0 deletes. */
export class HttpBrowser {
  readonly jar = new Map<string, Map<string, StoredCookie>>();

  clone(): HttpBrowser {
    const copy = new HttpBrowser();
    for (const [origin, cookies] of this.jar) copy.jar.set(origin, new Map(cookies));
    return copy;
  }

  cookie(url: string, name: string): StoredCookie | undefined {
    return this.jar.get(new URL(url).origin)?.get(name);
  }

  /** One request, no redirect followed; cookies sent and stored. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url);
    const cookies = [...(this.jar.get(target.origin) ?? new Map<string, StoredCookie>())]
      .filter(([, cookie]) => target.pathname.startsWith(cookie.path)).map(([name, cookie]) => `${name}=${cookie.value}`);
    const headers = new Headers(init.headers);
    if (cookies.length > 0) headers.set('cookie', cookies.join('; '));
    const response = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const equals = pair!.indexOf('=');
      const name = pair!.slice(0, equals);
      const path = /^path=(.*)$/i.exec(attributes.find((attribute) => /^path=/i.test(attribute)) ?? '')?.[1] ?? '/';
      const jar = this.jar.get(target.origin) ?? new Map<string, StoredCookie>();
      this.jar.set(target.origin, jar);
      if (attributes.some((attribute) => /^max-age=0$/i.test(attribute))) jar.delete(name);
      else jar.set(name, { value: pair!.slice(equals + 1), path, attributes: attributes.join('; ') });
    }
    return response;
  }

  /** Follows redirects from `url` until one points where `stop` says (its URL is answered), or a page that is no redirect. */
  async follow(url: string, stop: (next: URL) => boolean): Promise<{ stoppedAt?: string; response: Response; trail: string[] }> {
    const trail: string[] = [];
    let current = url;
    for (let hop = 0; hop < 20; hop++) {
      trail.push(current);
      const response = await this.request(current);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null) return { response, trail };
      await response.body?.cancel();
      const next = new URL(location, current);
      if (stop(next)) return { stoppedAt: next.href, response, trail };
      current = next.href;
    }
    throw new Error(`too many redirects: ${trail.join(' -> ')}`);
  }
}

