/**
 * The portfolio content model: what a content source returns before it is
 * turned into documents and chunks. Project and testimonial follow the
 * Sanity schema of the original (`_id`, title, role, company, overview,
 * vision, technologies[], contribution[], liveUrl, githubUrl; `_id`, author,
 * role, quote, linkedinUrl); the resume, profile and recommendations replace
 * the original's PDF and LinkedIn CSV export with CMS documents.
 */

export interface CmsProject {
  _id: string;
  title?: string | null;
  role?: string | null;
  company?: string | null;
  overview?: string | null;
  vision?: string | null;
  technologies?: string[] | null;
  contribution?: string[] | null;
  liveUrl?: string | null;
  githubUrl?: string | null;
}

export interface CmsTestimonial {
  _id: string;
  author?: string | null;
  role?: string | null;
  quote?: string | null;
  linkedinUrl?: string | null;
}

export interface CmsResume {
  _id: string;
  /** Plain text; section headers (Summary, Professional Experience, ...) on their own lines. */
  text?: string | null;
}

export interface CmsProfile {
  _id: string;
  name?: string | null;
  headline?: string | null;
  summary?: string | null;
  industry?: string | null;
  location?: string | null;
  websites?: string[] | null;
}

export interface CmsRecommendation {
  _id: string;
  author?: string | null;
  jobTitle?: string | null;
  company?: string | null;
  text?: string | null;
  visible?: boolean | null;
}

export interface PortfolioContent {
  projects: CmsProject[];
  testimonials: CmsTestimonial[];
  resumes: CmsResume[];
  profiles: CmsProfile[];
  recommendations: CmsRecommendation[];
}

/** Where the content comes from: a CMS over HTTP, or the built-in development portfolio. */
export interface ContentSource {
  readonly name: string;
  load(): Promise<PortfolioContent>;
}
