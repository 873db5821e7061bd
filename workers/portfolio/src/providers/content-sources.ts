import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import type { ContentSource, PortfolioContent } from "../domain/content.ts";

/** The built-in fictional portfolio of development mode. */
export class DevContentSource implements ContentSource {
  readonly name = "dev";

  async load(): Promise<PortfolioContent> {
    return structuredClone(AVERY_QUINN_PORTFOLIO);
  }
}

export interface SanityConfig {
  projectId: string;
  dataset: string;
  apiVersion: string;
  token: string;
  /** Overrides `https://<projectId>.api.sanity.io` (self-hosted or proxied Sanity-compatible APIs). */
  apiUrl: string;
}

/** Something that answers fetch requests: global fetch or a service binding. */
export interface HttpClient {
  fetch(request: Request): Promise<Response>;
}

const QUERIES = {
  projects: `*[_type == "project"] | order(_createdAt desc) {_id, title, role, company, overview, vision, technologies, contribution, liveUrl, githubUrl}`,
  testimonials: `*[_type == "testimonial"] | order(_createdAt desc) {_id, author, role, quote, linkedinUrl}`,
  resumes: `*[_type == "resume"] | order(_createdAt desc) {_id, text}`,
  profiles: `*[_type == "profile"] | order(_createdAt desc) {_id, name, headline, summary, industry, location, websites}`,
  recommendations: `*[_type == "recommendation"] | order(_createdAt desc) {_id, author, jobTitle, company, text, visible}`,
} as const;

const TIMEOUT_MS = 30_000;

export class CmsUnavailableError extends Error {
  override readonly name = "CmsUnavailableError";
}

/**
 * Reads the portfolio from a Sanity-compatible HTTP query API:
 * GET <base>/v<apiVersion>/data/query/<dataset>?query=<GROQ>, with a Bearer
 * token when one is configured; the documents are in `.result`.
 */
export class SanityContentSource implements ContentSource {
  readonly name = "sanity";

  constructor(
    private readonly config: SanityConfig,
    private readonly http: HttpClient = { fetch: (request) => fetch(request) },
  ) {}

  private baseUrl(): string {
    const base = this.config.apiUrl || `https://${this.config.projectId}.api.sanity.io`;
    return base.replace(/\/+$/, "");
  }

  private async query<T>(groq: string): Promise<T[]> {
    const url = new URL(
      `${this.baseUrl()}/v${this.config.apiVersion.replace(/^v/, "")}/data/query/${encodeURIComponent(this.config.dataset)}`,
    );
    url.searchParams.set("query", groq);
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.config.token) headers.Authorization = `Bearer ${this.config.token}`;
    const response = await this.http.fetch(
      new Request(url, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) }),
    );
    if (!response.ok)
      throw new CmsUnavailableError(`CMS query failed with HTTP ${response.status}`);
    const body = (await response.json()) as { result?: unknown };
    if (!Array.isArray(body.result)) throw new CmsUnavailableError("CMS answer has no result list");
    return (body.result as T[]).filter(
      (doc) => doc && typeof (doc as { _id?: unknown })._id === "string",
    );
  }

  async load(): Promise<PortfolioContent> {
    const [projects, testimonials, resumes, profiles, recommendations] = await Promise.all([
      this.query<PortfolioContent["projects"][number]>(QUERIES.projects),
      this.query<PortfolioContent["testimonials"][number]>(QUERIES.testimonials),
      this.query<PortfolioContent["resumes"][number]>(QUERIES.resumes),
      this.query<PortfolioContent["profiles"][number]>(QUERIES.profiles),
      this.query<PortfolioContent["recommendations"][number]>(QUERIES.recommendations),
    ]);
    return { projects, testimonials, resumes, profiles, recommendations };
  }
}
