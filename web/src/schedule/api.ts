// Talking to budcluster: GraphQL over HTTP POST and subscriptions over graphql-transport-ws.
// Every request carries the document text and its persisted-query hash.
import { createClient, type Client } from "graphql-ws";
import type { TypedDocumentString } from "../../../frontend-contract/types/graphql";

export class AuthError extends Error {}
export class NetworkError extends Error {}
export class RequestError extends Error {}

export const AUTH_CLOSE_CODES = new Set([4401, 4403]);

export function graphqlBody<R, V>(document: TypedDocumentString<R, V>, variables?: V): {
  query: string;
  variables?: V;
  extensions: { persistedQuery: { version: 1; sha256Hash: string } };
} {
  const hash = document.__meta__?.hash;
  if (typeof hash !== "string") throw new Error("document without a persisted hash");
  return {
    query: document.toString(),
    ...(variables === undefined ? {} : { variables }),
    extensions: { persistedQuery: { version: 1, sha256Hash: hash } },
  };
}

interface GraphQLErrorShape {
  message: string;
  extensions?: { code?: string };
}

export async function query<R, V>(token: string, document: TypedDocumentString<R, V>, variables?: V): Promise<R> {
  let response: Response;
  try {
    response = await fetch(new URL("/graphql", location.href), {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify(graphqlBody(document, variables)),
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new NetworkError(`Cannot reach budcluster at ${location.host}: the server is down or the network is unavailable.`);
  }
  type Body = { data?: R | null; errors?: GraphQLErrorShape[] } | null;
  let body: Body;
  try {
    body = (await response.json()) as Body;
  } catch {
    body = null;
  }
  const first = body?.errors?.[0];
  if (response.status === 401 || response.status === 403 || first?.extensions?.code === "UNAUTHENTICATED") {
    const why = first?.message ?? `HTTP ${response.status}`;
    throw new AuthError(`The API token was refused (${why}). Enter a valid token.`);
  }
  if (first) throw new RequestError(`${first.message}${first.extensions?.code ? ` (${first.extensions.code})` : ""}`);
  if (!response.ok || body?.data == null) throw new RequestError(`The server answered HTTP ${response.status}.`);
  return body.data;
}

export interface SocketEvents {
  connecting(reconnect: boolean): void;
  connected(reconnect: boolean): void;
  closed(event: { code?: number; reason?: string } | undefined): void;
  fatal(error: unknown): void;
}

export function socketUrl(): string {
  const url = new URL("/graphql", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

function closeCode(value: unknown): number | undefined {
  return typeof value === "object" && value != null && "code" in value && typeof (value as { code: unknown }).code === "number"
    ? (value as { code: number }).code
    : undefined;
}

export function isAuthClose(value: unknown): boolean {
  const code = closeCode(value);
  return code != null && AUTH_CLOSE_CODES.has(code);
}

export function openSocket(token: string, events: SocketEvents): Client {
  const client = createClient({
    url: socketUrl(),
    connectionParams: { Authorization: `Bearer ${token}` },
    lazy: false,
    retryAttempts: Number.POSITIVE_INFINITY,
    keepAlive: 15_000,
    shouldRetry: (event) => !isAuthClose(event),
    retryWait: async (retries) => {
      const base = Math.min(15_000, 500 * 2 ** Math.min(retries, 5));
      await new Promise((resolve) => setTimeout(resolve, base / 2 + Math.random() * (base / 2)));
    },
    onNonLazyError: (error) => events.fatal(error),
    on: {
      connecting: (reconnect) => events.connecting(reconnect),
      connected: (_socket, _payload, reconnect) => events.connected(reconnect),
      closed: (event) => events.closed(event as { code?: number; reason?: string } | undefined),
    },
  });
  return client;
}
