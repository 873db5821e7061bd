import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

// A local HTTP server that speaks the Stripe wire format for the endpoints
// the payprovider adapter uses: POST /v1/customers, GET /v1/customers/:id,
// POST /v1/payment_intents (form-encoded, Idempotency-Key honoured: the
// same key answers the same object), GET /v1/payment_intents/:id. It keeps
// every request it received. Started by the billing tests' global setup
// (Node), reached by the worker under test over real HTTP.
//
// Test control, under /__control (not part of the provider's API):
//   POST /__control/customers/:id  {defaultPaymentMethod: string|null}
//   POST /__control/behaviour      {tenantId, charge: "succeed"|"decline"|"process"|"unavailable"}
//   POST /__control/intents/:id    {status}            (what a later retrieve answers)
//   GET  /__control/requests?tenantId=...               (requests seen, parsed)

type Charge = "succeed" | "decline" | "process" | "unavailable";

interface Customer {
  id: string;
  object: "customer";
  name: string | null;
  metadata: Record<string, string>;
  invoice_settings: { default_payment_method: string | null };
}

interface Intent {
  id: string;
  object: "payment_intent";
  amount: number;
  currency: string;
  customer: string;
  payment_method: string;
  confirm: boolean;
  off_session: boolean;
  status: string;
  last_payment_error: { code: string; message: string } | null;
  metadata: Record<string, string>;
}

export interface SeenRequest {
  method: string;
  path: string;
  idempotencyKey: string | null;
  authorization: string | null;
  contentType: string | null;
  form: Record<string, string>;
}

function metadataOf(form: Record<string, string>): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(form)) {
    const match = /^metadata\[(.+)\]$/.exec(key);
    if (match?.[1]) metadata[match[1]] = value;
  }
  return metadata;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function send(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

const stripeError = (type: string, message: string, extra: Record<string, unknown> = {}) => ({
  error: { type, message, ...extra },
});

export function fakePayProvider(apiKey: string) {
  const customers = new Map<string, Customer>();
  const intents = new Map<string, Intent>();
  const idempotent = new Map<string, { status: number; body: unknown }>();
  const behaviour = new Map<string, Charge>();
  const seen: SeenRequest[] = [];
  let sequence = 0;
  const nextId = (prefix: string) => `${prefix}_${(++sequence).toString(36).padStart(8, "0")}`;

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const url = new URL(request.url ?? "/", "http://fake");
    const raw = request.method === "POST" ? await readBody(request) : "";
    const path = url.pathname;

    if (path.startsWith("/__control")) {
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      if (path === "/__control/behaviour") {
        behaviour.set(String(body.tenantId), body.charge as Charge);
        return send(response, 200, { ok: true });
      }
      const customerMatch = /^\/__control\/customers\/([^/]+)$/.exec(path);
      if (customerMatch?.[1]) {
        const customer = customers.get(customerMatch[1]);
        if (!customer) return send(response, 404, { error: "no such customer" });
        customer.invoice_settings.default_payment_method =
          (body.defaultPaymentMethod as string | null) ?? null;
        return send(response, 200, customer);
      }
      const intentMatch = /^\/__control\/intents\/([^/]+)$/.exec(path);
      if (intentMatch?.[1]) {
        const intent = intents.get(intentMatch[1]);
        if (!intent) return send(response, 404, { error: "no such intent" });
        intent.status = String(body.status);
        return send(response, 200, intent);
      }
      if (path === "/__control/requests") {
        const tenantId = url.searchParams.get("tenantId");
        return send(response, 200, {
          requests: seen.filter(
            (entry) =>
              !tenantId ||
              entry.form["metadata[tenantId]"] === tenantId ||
              entry.path.includes(tenantId),
          ),
          customers: [...customers.values()].filter(
            (customer) => !tenantId || customer.metadata.tenantId === tenantId,
          ),
        });
      }
      return send(response, 404, { error: "unknown control" });
    }

    const form = Object.fromEntries(new URLSearchParams(raw));
    const entry: SeenRequest = {
      method: request.method ?? "GET",
      path,
      idempotencyKey: (request.headers["idempotency-key"] as string | undefined) ?? null,
      authorization: request.headers.authorization ?? null,
      contentType: request.headers["content-type"] ?? null,
      form,
    };
    seen.push(entry);

    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      return send(response, 401, stripeError("invalid_request_error", "Invalid API Key provided"));
    }
    if (request.method === "POST" && entry.idempotencyKey) {
      const replay = idempotent.get(entry.idempotencyKey);
      if (replay) return send(response, replay.status, replay.body);
    }
    const remember = (status: number, body: unknown) => {
      if (request.method === "POST" && entry.idempotencyKey) {
        idempotent.set(entry.idempotencyKey, { status, body });
      }
      return send(response, status, body);
    };

    if (request.method === "POST" && path === "/v1/customers") {
      const customer: Customer = {
        id: nextId("cus"),
        object: "customer",
        name: form.name ?? null,
        metadata: metadataOf(form),
        // The customer saved a card when they signed up (a SetupIntent, outside this API).
        invoice_settings: { default_payment_method: nextId("pm") },
      };
      customers.set(customer.id, customer);
      return remember(200, customer);
    }
    const customerPath = /^\/v1\/customers\/([^/]+)$/.exec(path);
    if (request.method === "GET" && customerPath?.[1]) {
      const customer = customers.get(customerPath[1]);
      if (!customer) {
        return send(response, 404, stripeError("invalid_request_error", "No such customer"));
      }
      return send(response, 200, customer);
    }
    if (request.method === "POST" && path === "/v1/payment_intents") {
      const metadata = metadataOf(form);
      const charge = behaviour.get(metadata.tenantId ?? "") ?? "succeed";
      if (charge === "unavailable") {
        // Not remembered: nothing was decided, as with a real 5xx.
        return send(response, 503, stripeError("api_error", "Service unavailable"));
      }
      const customer = customers.get(form.customer ?? "");
      if (!customer) {
        return remember(400, stripeError("invalid_request_error", "No such customer"));
      }
      if (
        !form.payment_method ||
        form.payment_method !== customer.invoice_settings.default_payment_method
      ) {
        return remember(
          400,
          stripeError(
            "invalid_request_error",
            "The payment method does not belong to the customer",
          ),
        );
      }
      const intent: Intent = {
        id: nextId("pi"),
        object: "payment_intent",
        amount: Number(form.amount),
        currency: form.currency ?? "",
        customer: customer.id,
        payment_method: form.payment_method,
        confirm: form.confirm === "true",
        off_session: form.off_session === "true",
        status:
          charge === "succeed"
            ? "succeeded"
            : charge === "process"
              ? "processing"
              : "requires_payment_method",
        last_payment_error:
          charge === "decline"
            ? { code: "card_declined", message: "Your card was declined." }
            : null,
        metadata,
      };
      intents.set(intent.id, intent);
      if (charge === "decline") {
        return remember(
          402,
          stripeError("card_error", "Your card was declined.", {
            code: "card_declined",
            payment_intent: intent,
          }),
        );
      }
      return remember(200, intent);
    }
    const intentPath = /^\/v1\/payment_intents\/([^/]+)$/.exec(path);
    if (request.method === "GET" && intentPath?.[1]) {
      const intent = intents.get(intentPath[1]);
      if (!intent) {
        return send(response, 404, stripeError("invalid_request_error", "No such payment_intent"));
      }
      return send(response, 200, intent);
    }
    return send(
      response,
      404,
      stripeError("invalid_request_error", `Unrecognized request URL (${request.method}: ${path})`),
    );
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error) => send(response, 500, { error: String(error) }));
  });
  return {
    async start(): Promise<string> {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const address = server.address();
      if (!address || typeof address === "string") throw new Error("no port");
      return `http://127.0.0.1:${address.port}`;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
