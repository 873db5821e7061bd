import { html } from "hono/html";
import { type ApiResult, errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import type { Html } from "../layout.ts";
import { type PageHandler, signedIn } from "../signed-in.ts";
import { type ConsoleView, canSee, render } from "../view.ts";

type Snapshot = {
  featureLookupKey: string;
  featureType: "BOOLEAN" | "QUOTA" | "METERED";
  limit: number | null;
  includedAmount: number | null;
  limitBehavior: string | null;
  resetPeriod: string | null;
};

/** A page for the tenant's members of some roles; others are told why not. */
export function tenantPage(href: string, title: string, handler: PageHandler): PageHandler {
  return async (c, view) => {
    if (!view.tenantId) {
      return render(c, view, {
        title,
        current: href,
        body: html`<p class="empty">You are not a member of any tenant yet, so there is nothing to show here.${
          view.user.isPlatformAdmin ? " The operator screens are in the navigation." : ""
        }</p>`,
      });
    }
    if (!canSee(view, href)) {
      return render(c, view, {
        title,
        current: href,
        status: 403,
        error: `Your role in this tenant (${view.role}) does not give access to ${title.toLowerCase()}. Ask an owner or admin if you need it.`,
        body: html``,
      });
    }
    return handler(c, view);
  };
}

/** Route handlers for tenant pages: signed in, then a member whose role may see `href`. */
export function tenantRoute(fetchApi: ApiFetch) {
  return (href: string, title: string, handler: PageHandler) =>
    signedIn(fetchApi, tenantPage(href, title, handler));
}

/** Why a section could not be shown, in words. */
export function unavailable(what: string, result: ApiResult): Html {
  if (result.status === 403) return html`<p class="empty">Your role cannot see ${what}.</p>`;
  return html`<p class="error" role="alert">${what[0]?.toUpperCase()}${what.slice(1)} could not be loaded: ${errorText(result)}</p>`;
}

export async function activeSubscription(view: ConsoleView) {
  return view.api.get("/subscriptions/active");
}

export function countedFeatures(
  subscription: { entitlementSnapshots?: Snapshot[] } | null,
): Snapshot[] {
  return (subscription?.entitlementSnapshots ?? []).filter((s) => s.featureType !== "BOOLEAN");
}

/** What the console shows of a catalog feature: its name, and how its usage is measured and split. */
export interface CatalogFeature {
  name: string;
  meter: { aggregation: string; groupBy: string[] } | null;
}

/** The catalog's features by lookup key (archived included); empty when unreadable. */
export async function featureCatalog(view: ConsoleView): Promise<Map<string, CatalogFeature>> {
  const features = await view.api.get("/features?includeArchived=true");
  if (!features.ok) return new Map();
  return new Map(
    (features.body.data as ({ lookupKey: string } & CatalogFeature)[]).map((feature) => [
      feature.lookupKey,
      { name: feature.name, meter: feature.meter ?? null },
    ]),
  );
}

/** Feature names by lookup key (archived included), for pickers and headings; empty when unreadable. */
export async function featureNames(view: ConsoleView): Promise<Map<string, string>> {
  const catalog = await featureCatalog(view);
  return new Map([...catalog].map(([key, feature]) => [key, feature.name]));
}

/** "API calls (api_calls)": the name people know, and the key the API takes. */
export function featureLabel(names: Map<string, string>, lookupKey: string): string {
  const name = names.get(lookupKey);
  return name && name !== lookupKey ? `${name} (${lookupKey})` : lookupKey;
}

/** What a feature's usage is measured against: its included amount (METERED) or its limit (QUOTA). */
export function capOf(feature: Snapshot): number | null {
  return feature.featureType === "METERED" ? feature.includedAmount : feature.limit;
}

/** Each feature's entitlement check (usage in its current window), by lookup key. */
export async function usageChecks(
  view: ConsoleView,
  lookupKeys: readonly string[],
): Promise<Map<string, ApiResult>> {
  const keys = [...new Set(lookupKeys)];
  const checks = await Promise.all(
    keys.map((key) => view.api.get(`/entitlements/${encodeURIComponent(key)}/check`)),
  );
  return new Map(keys.map((key, index) => [key, checks[index] as ApiResult]));
}
