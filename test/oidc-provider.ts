import { type Server, createServer } from 'node:http';
import Provider from 'oidc-provider';

/** A real OpenID Provider (the oidc-provider package) on 127.0.0.1 for sign-in tests, with its dev login form. */
export interface Account {
  username: string;
  email: string;
  groups?: string[];
}

export interface TestProvider {
  issuer: string;
  accounts: Map<string, Account>;
  close(): Promise<void>;
}

export async function startProvider(redirectUris: string[]): Promise<TestProvider> {
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const accounts = new Map<string, Account>();
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'weft',
        client_secret: 'weft-client-secret',
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    scopes: ['openid', 'profile', 'email', 'groups'],
    cookies: { keys: ['test-cookie-key-0123456789'] },
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => {
        const a: Account = accounts.get(id) ?? { username: id, email: `${id}@corp.test` };
        return {
          sub: id,
          preferred_username: a.username,
          name: a.username,
          email: a.email,
          email_verified: true,
          groups: a.groups ?? [],
        };
      },
    }),
  });
  // quiet: the provider logs its dev-interaction warnings and refused requests
  provider.on('server_error', () => undefined);
  server.on('request', provider.callback());
  return {
    issuer,
    accounts,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A cookie jar of one origin (paths ignored): enough for the provider's own cookies. */
export class Jar {
  private cookies = new Map<string, string>();
  take(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * Drives the provider's side from its authorization URL: the dev login form (any login is an
 * account), then consent, until it redirects to the client's redirect URI, which is returned.
 */
export async function loginAtProvider(authorizationUrl: string, login: string): Promise<string> {
  const jar = new Jar();
  let url = authorizationUrl;
  for (let hops = 0; hops < 20; hops++) {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(res);
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location')!, url).href;
      if (!next.startsWith(new URL(authorizationUrl).origin)) return next;
      url = next;
      continue;
    }
    const page = await res.text();
    if (res.status !== 200) throw new Error(`provider answered ${res.status}: ${page.slice(0, 500)}`);
    const action = new URL(/action="([^"]+)"/.exec(page)![1]!, url).href;
    const prompt = /name="prompt" value="([a-z]+)"/.exec(page)![1]!;
    const form: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
    const post = await fetch(action, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    jar.take(post);
    if (post.status < 300 || post.status >= 400)
      throw new Error(`provider form answered ${post.status}: ${(await post.text()).slice(0, 500)}`);
    url = new URL(post.headers.get('location')!, action).href;
  }
  throw new Error('too many redirects at the provider');
}
