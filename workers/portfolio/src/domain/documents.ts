import type {
  CmsProfile,
  CmsProject,
  CmsRecommendation,
  CmsResume,
  CmsTestimonial,
  PortfolioContent,
} from "./content.ts";

/** Source labels stored with each chunk (the original's sanity/linkedin are project/profile here). */
export type SourceKind = "project" | "testimonial" | "resume" | "profile";

export const SOURCE_KINDS: readonly SourceKind[] = ["resume", "project", "testimonial", "profile"];

/**
 * One document before chunking. `prefix` is the header block repeated on
 * every chunk when the document is split; `itemId`/`title` name the
 * portfolio item the answer's `sources` point at.
 */
export interface PortfolioDocument {
  source: SourceKind;
  sourceId: string;
  itemId: string;
  title: string;
  text: string;
  prefix: string;
}

const clean = (value: string | null | undefined) => (value ?? "").trim();

function lines(...entries: [label: string, value: string | null | undefined][]): string[] {
  return entries
    .filter(([, value]) => clean(value) !== "")
    .map(([label, value]) => `${label}: ${clean(value)}`);
}

function uniqueCaseInsensitive(values: (string | null | undefined)[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const value of values) {
    const trimmed = clean(value);
    if (!trimmed || seen.has(trimmed.toLowerCase())) continue;
    seen.add(trimmed.toLowerCase());
    out.push(trimmed);
  }
  return out;
}

function document(
  base: Omit<PortfolioDocument, "text" | "prefix">,
  prefixLines: string[],
  bodyLines: string[],
): PortfolioDocument {
  const prefix = prefixLines.join("\n");
  const body = bodyLines.join("\n");
  return { ...base, prefix, text: body ? `${prefix}\n\n${body}` : prefix };
}

export function projectDocuments(project: CmsProject): PortfolioDocument[] {
  const title = clean(project.title) || project._id;
  const technologies = uniqueCaseInsensitive(project.technologies ?? []);
  const keywords = uniqueCaseInsensitive([
    project.title,
    project.company,
    project.role,
    ...technologies,
  ]).join(", ");
  const hint = `Useful for queries about: projects built, what was built, ${title}, role, company and technologies used`;
  const base = { source: "project" as const, itemId: project._id, title };
  const docs: PortfolioDocument[] = [
    document(
      { ...base, sourceId: `${project._id}#overview` },
      [
        `Project: ${title}`,
        "Evidence Type: project",
        hint,
        ...lines(["Company", project.company], ["Role", project.role]),
        ...(technologies.length ? [`Technologies: ${technologies.join(", ")}`] : []),
        ...lines(["Keywords", keywords]),
      ],
      lines(["Overview", project.overview], ["Vision", project.vision]),
    ),
  ];
  const contributions = (project.contribution ?? []).map(clean).filter(Boolean);
  if (contributions.length > 0) {
    docs.push(
      document(
        { ...base, sourceId: `${project._id}#contributions` },
        [
          `Project: ${title}`,
          "Evidence Type: project-contribution",
          hint,
          ...lines(["Role", project.role]),
          ...(technologies.length ? [`Technologies: ${technologies.join(", ")}`] : []),
          ...lines(["Keywords", keywords]),
          "Key Contributions:",
        ],
        contributions.map((item) => `- ${item}`),
      ),
    );
  }
  if (clean(project.liveUrl) || clean(project.githubUrl)) {
    docs.push(
      document(
        { ...base, sourceId: `${project._id}#links` },
        [
          `Project: ${title}`,
          "Evidence Type: project-links",
          `Useful for queries about: links, demo, source code and GitHub of ${title}`,
          ...lines(
            ["Live URL", project.liveUrl],
            ["GitHub", project.githubUrl],
            ["Keywords", keywords],
          ),
        ],
        [],
      ),
    );
  }
  return docs;
}

export function testimonialDocument(testimonial: CmsTestimonial): PortfolioDocument | null {
  if (!clean(testimonial.quote) && !clean(testimonial.author) && !clean(testimonial.role))
    return null;
  return document(
    {
      source: "testimonial",
      sourceId: testimonial._id,
      itemId: testimonial._id,
      title: `Testimonial from ${clean(testimonial.author) || "a colleague"}`,
    },
    [
      "Evidence Type: testimonial",
      "Useful for queries about: testimonials, feedback, what colleagues say",
      ...lines(["From", testimonial.author], ["Role", testimonial.role]),
    ],
    clean(testimonial.quote) ? [`Testimonial: "${clean(testimonial.quote)}"`] : [],
  );
}

const RESUME_HEADERS = [
  "Summary",
  "Professional Experience",
  "Employment History",
  "Experience",
  "Education",
  "Technical Skills",
  "Skills",
  "Projects",
  "Certifications",
];

/** Splits a resume on whole-line section headers, as the original did with its PDF text. */
export function resumeDocuments(resume: CmsResume): PortfolioDocument[] {
  const text = (resume.text ?? "")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .join("\n")
    .trim();
  if (!text) return [];
  const headerPattern = new RegExp(`^(${RESUME_HEADERS.join("|")})$`, "gim");
  const matches = [...text.matchAll(headerPattern)];
  const base = { source: "resume" as const, itemId: resume._id, title: "Resume" };
  if (matches.length === 0) return [{ ...base, sourceId: `${resume._id}#full`, text, prefix: "" }];
  const sections: { header: string; body: string }[] = [];
  const intro = text.slice(0, matches[0]!.index).trim();
  if (intro) sections.push({ header: "Introduction", body: intro });
  matches.forEach((match, i) => {
    const start = match.index + match[0].length;
    const end = matches[i + 1]?.index ?? text.length;
    const header = RESUME_HEADERS.find((h) => h.toLowerCase() === match[1]!.toLowerCase())!;
    sections.push({ header, body: text.slice(start, end).trim() });
  });
  return sections
    .filter((section) => section.body)
    .flatMap((section) => {
      const prefix = `Resume Section: ${section.header}`;
      const slug = section.header.toLowerCase().replace(/\s+/g, "-");
      const entries = EXPERIENCE_HEADERS.has(section.header) ? jobEntries(section.body) : [];
      // One document per job, so a job's role, company, dates and description stay in one chunk
      // (and a question about one employer retrieves that job, not the whole history).
      if (entries.length > 1)
        return entries.map((entry, i) => {
          const company = fieldValue(entry, "Company");
          const role = fieldValue(entry, "Role");
          const label = [role, company].filter(Boolean).join(" at ") || `entry ${i + 1}`;
          const id = `${resume._id}#${slug}-${i + 1}`;
          return {
            ...base,
            itemId: id,
            sourceId: id,
            title: `Resume: ${label}`,
            prefix,
            text: `${prefix}\n${entry}`,
          };
        });
      return [
        {
          ...base,
          // Each section is its own item: sources name "Resume: Education", not just "Resume".
          itemId: `${resume._id}#${slug}`,
          sourceId: `${resume._id}#${slug}`,
          title: `Resume: ${section.header}`,
          prefix,
          text: `${prefix}\n${section.body}`,
        },
      ];
    });
}

const EXPERIENCE_HEADERS = new Set(["Professional Experience", "Employment History", "Experience"]);

/** The blank-line separated entries of an experience section (one job each). */
function jobEntries(body: string): string[] {
  return body
    .split(/\n\s*\n/)
    .map((entry) => entry.trim())
    .filter(Boolean);
}

function fieldValue(entry: string, label: string): string {
  const match = new RegExp(`^${label}:\\s*(.+)$`, "im").exec(entry);
  return match ? match[1]!.trim() : "";
}

export function profileDocuments(profile: CmsProfile): PortfolioDocument[] {
  const base = { source: "profile" as const, itemId: profile._id, title: "Profile" };
  const docs: PortfolioDocument[] = [];
  if (clean(profile.summary) || clean(profile.headline)) {
    docs.push(
      document(
        { ...base, sourceId: `${profile._id}#summary` },
        [
          "Evidence Type: profile",
          "Useful for queries about: background, headline, summary, location, industry",
          ...lines(
            ["Name", profile.name],
            ["Headline", profile.headline],
            ["Industry", profile.industry],
            ["Location", profile.location],
          ),
        ],
        lines(["Summary", profile.summary]),
      ),
    );
  }
  const websites = (profile.websites ?? []).map(clean).filter(Boolean);
  if (websites.length > 0) {
    docs.push(
      document(
        { ...base, sourceId: `${profile._id}#links` },
        [
          "Evidence Type: profile-links",
          "Useful for queries about: website, GitHub, links, online profiles",
          `Websites: ${websites.join(", ")}`,
        ],
        [],
      ),
    );
  }
  return docs;
}

export function recommendationDocument(
  recommendation: CmsRecommendation,
): PortfolioDocument | null {
  if (recommendation.visible === false || !clean(recommendation.text)) return null;
  return document(
    {
      source: "profile",
      sourceId: recommendation._id,
      itemId: recommendation._id,
      title: `Recommendation from ${clean(recommendation.author) || "a colleague"}`,
    },
    [
      "Evidence Type: recommendation",
      "Useful for queries about: recommendations, feedback, what colleagues say",
      ...lines(
        ["Recommendation from", recommendation.author],
        ["Their role", recommendation.jobTitle],
        ["Company", recommendation.company],
      ),
    ],
    [`"${clean(recommendation.text)}"`],
  );
}

/** Every document of a content snapshot, by source. */
export function buildDocuments(content: PortfolioContent): PortfolioDocument[] {
  return [
    ...content.resumes.flatMap(resumeDocuments),
    ...content.projects.flatMap(projectDocuments),
    ...content.testimonials.map(testimonialDocument).filter((doc) => doc !== null),
    ...content.profiles.flatMap(profileDocuments),
    ...content.recommendations.map(recommendationDocument).filter((doc) => doc !== null),
  ];
}
