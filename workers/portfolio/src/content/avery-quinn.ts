/**
 * The fictional portfolio used in development mode (DEV_MODE=true).
 * Avery Quinn does not exist; every name, company and quote here is made up.
 */
import type { PortfolioContent } from "../domain/content.ts";

const RESUME = `Avery Quinn
Senior Software Engineer based in Lisbon, Portugal (remote-friendly)
Contact: email avery.quinn@example.dev to reach Avery about roles or collaborations

Summary
Senior Software Engineer with 9+ years of experience building web products end to end, with a focus on TypeScript, React and Python. Avery designs APIs and data pipelines, leads small product teams, and has shipped retrieval-augmented assistants, health dashboards and high-traffic checkout flows. Known for careful performance work, readable code and mentoring.

Professional Experience
Role: Staff Engineer
Company: Northwind Health
Dates: 2021 to present
Led the engineering of Signal Canvas, a clinical analytics dashboard used by 40 hospitals. Designed the event ingestion pipeline in Python and the React front end, cut dashboard load time from 6 seconds to 1.2 seconds, and mentored four engineers.

Role: Senior Frontend Engineer
Company: Parcel & Pine
Dates: 2018 to 2021
Owned the checkout experience of an e-commerce marketplace. Rebuilt checkout as Checkout Orbit in Next.js and TypeScript, ran A/B tests on every step, and raised conversion by 11 percent. Introduced performance budgets and Core Web Vitals monitoring.

Role: Software Engineer
Company: Brightlane Labs
Dates: 2016 to 2018
Built internal tools and REST APIs in Node.js and PostgreSQL for a logistics start-up; automated deployments with Docker and GitHub Actions.

Technical Skills
Languages: TypeScript, JavaScript, Python, SQL, Go
Frameworks: React, Next.js, Node.js, FastAPI, Hono
Platforms: Cloudflare Workers, AWS, PostgreSQL, D1, Docker
AI and Data: Retrieval-augmented generation, embeddings, pgvector, pandas
Tools: GitHub Actions, Vitest, Playwright, Grafana

Education
B.Sc. in Computer Science, University of Porto, 2016
Thesis on incremental search indexes for code repositories.`;

export const AVERY_QUINN_PORTFOLIO: PortfolioContent = {
  projects: [
    {
      _id: "project-ask-avery",
      title: "Ask Avery",
      role: "Creator and sole engineer",
      company: "Personal Project",
      overview:
        "Ask Avery is a portfolio assistant that answers questions about Avery's work from verified portfolio content. It streams answers over server-sent events, refuses out-of-scope and unsafe questions with a safety pre-router, and only answers when retrieval is confident.",
      vision:
        "Give recruiters and collaborators a quick, honest way to explore Avery's work without guessing or inventing facts.",
      technologies: ["TypeScript", "Cloudflare Workers", "Hono", "D1", "Vectorize", "RAG"],
      contribution: [
        "Designed the retrieval pipeline with a semantic cache and a confidence gate",
        "Built the CMS webhook ingestion with chunking and upserts by source id",
        "Wrote the safety pre-router and its labelled evaluation set",
      ],
      liveUrl: "https://ask.avery-quinn.example.dev",
      githubUrl: "https://github.com/avery-quinn-example/ask-avery",
    },
    {
      _id: "project-signal-canvas",
      title: "Signal Canvas",
      role: "Tech lead",
      company: "Northwind Health",
      overview:
        "Signal Canvas is a clinical analytics dashboard that turns bedside monitoring events into live ward-level views for 40 hospitals.",
      vision: "Help nurses spot deteriorating patients minutes earlier with clear, fast dashboards.",
      technologies: ["React", "TypeScript", "Python", "Kafka", "PostgreSQL", "Dashboards"],
      contribution: [
        "Led a team of five engineers from prototype to production",
        "Designed the Python event ingestion pipeline handling 20,000 events per second",
        "Cut dashboard load time from 6 seconds to 1.2 seconds",
      ],
      liveUrl: null,
      githubUrl: null,
    },
    {
      _id: "project-checkout-orbit",
      title: "Checkout Orbit",
      role: "Senior Frontend Engineer",
      company: "Parcel & Pine",
      overview:
        "Checkout Orbit is the rebuilt checkout flow of the Parcel & Pine marketplace, served to two million shoppers a month.",
      vision: "Make checkout fast and calm on any phone, and let data decide every change.",
      technologies: ["React", "Next.js", "TypeScript", "A/B Testing", "Performance"],
      contribution: [
        "Rebuilt checkout in Next.js with server rendering and performance budgets",
        "Ran A/B tests on every step and raised conversion by 11 percent",
        "Introduced Core Web Vitals monitoring for all storefront pages",
      ],
      liveUrl: null,
      githubUrl: null,
    },
    {
      _id: "project-tidepool-cli",
      title: "Tidepool CLI",
      role: "Maintainer",
      company: "Open Source",
      overview:
        "Tidepool is an open-source command-line tool that syncs local Postgres fixtures with preview environments, used by a few hundred teams.",
      vision: "Make realistic test data as easy to share as code.",
      technologies: ["Go", "PostgreSQL", "Docker", "GitHub Actions"],
      contribution: [
        "Wrote the snapshot and restore engine in Go",
        "Added Docker-based integration tests run on GitHub Actions",
        "Reviewed and merged contributions from more than 40 people",
      ],
      liveUrl: null,
      githubUrl: "https://github.com/avery-quinn-example/tidepool",
    },
  ],
  testimonials: [
    {
      _id: "testimonial-morgan-ellis",
      author: "Morgan Ellis",
      role: "Engineering Manager, Northwind Health",
      quote:
        "Avery is the engineer you hand the hardest problem to. On Signal Canvas they turned a slow, fragile dashboard into something nurses trust, and made everyone around them better along the way.",
      linkedinUrl: "",
    },
    {
      _id: "testimonial-priya-raman",
      author: "Priya Raman",
      role: "Product Manager, Parcel & Pine",
      quote:
        "Working with Avery on Checkout Orbit was a joy: clear trade-offs, honest estimates, and every experiment shipped with the data to back it up.",
      linkedinUrl: "",
    },
  ],
  resumes: [{ _id: "resume", text: RESUME }],
  profiles: [
    {
      _id: "profile",
      name: "Avery Quinn",
      headline: "Senior Software Engineer · TypeScript, React, Python · building calm, fast products",
      summary:
        "I build web products end to end, from data pipelines to the last pixel of the interface. Lately I work on retrieval-augmented assistants and edge platforms. I enjoy mentoring and making teams faster with good tooling.",
      industry: "Software Development",
      location: "Lisbon, Portugal",
      websites: [
        "https://avery-quinn.example.dev",
        "https://github.com/avery-quinn-example",
      ],
    },
  ],
  recommendations: [
    {
      _id: "recommendation-jordan-blake",
      author: "Jordan Blake",
      jobTitle: "VP Engineering",
      company: "Northwind Health",
      text: "Avery combines deep technical skill with real care for users. They led Signal Canvas through a difficult migration without a single outage and grew two engineers into tech leads.",
      visible: true,
    },
    {
      _id: "recommendation-sam-okafor",
      author: "Sam Okafor",
      jobTitle: "Senior Engineer",
      company: "Brightlane Labs",
      text: "Avery taught me how to write APIs that other people enjoy using. Patient, precise and always ready to pair on a tricky bug.",
      visible: true,
    },
  ],
};
