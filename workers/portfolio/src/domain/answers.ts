import type { PreRouterReason } from "./pre-router.ts";
import type { Persona } from "./settings.ts";

/** Fixed replies: the pre-router's canned answers and the fallbacks. */

export function cannedAnswer(reason: PreRouterReason, persona: Persona, devMode: boolean): string {
  const { personName: name, contactEmail: email, assistantName: assistant } = persona;
  const first = name.split(/\s+/)[0] || name;
  switch (reason) {
    case "prompt_override_attempt":
      return `I can't share my internal instructions or set my rules aside. I'm happy to help with ${name}'s public portfolio: projects, experience, skills and testimonials.`;
    case "explicit_content":
      return `I can't help with explicit or sexual requests. Ask me about ${name}'s projects, experience or skills instead.`;
    case "personhood_confusion":
      return devMode
        ? `No. I'm not ${name}; I'm the development-mode version of ${assistant}, an AI assistant for a fictional portfolio. I don't speak for a real person, and every answer comes from fictional seeded data. The fictional contact address is ${email}.`
        : `No. I'm not ${name}; I'm ${assistant}, the AI assistant for ${first}'s public portfolio. To reach ${name} directly, write to ${email}.`;
    case "assistant_identity":
      return devMode
        ? `I'm the development-mode version of ${assistant}, an AI assistant that answers questions about ${name}'s fictional portfolio from seeded data. No real model tokens are spent here. Ask me about projects, experience, skills or testimonials.`
        : `I'm ${assistant}, the AI assistant on ${name}'s portfolio site. I can help with ${first}'s projects, experience, skills and public profile.`;
    case "compensation":
      return devMode
        ? `The fictional portfolio data has no salary or compensation information. I can tell you about ${name}'s experience, projects and skills; for anything else, the fictional contact is ${email}.`
        : `I don't have verified public information about ${name}'s compensation. I can tell you about ${first}'s experience, projects and skills; for anything else, contact ${email}.`;
    case "sensitive_personal_data":
      return `I only share ${name}'s professional, public information, never private personal details. The public contact is ${email}.`;
    case "unsupported_topic":
      return `I can only answer questions about ${name}'s projects, experience, skills, testimonials and public profile. Ask me something in that area!`;
  }
}

export function lowConfidenceAnswer(
  reason: "empty_results" | "low_similarity" | "low_term_coverage",
  persona: Persona,
): string {
  const offer = `I can help with ${persona.personName}'s projects, experience, skills, testimonials and public contact details, or you can write to ${persona.contactEmail}.`;
  if (reason === "empty_results")
    return `There is no verified portfolio information about that yet. ${offer}`;
  return `I don't have enough verified portfolio information to answer that confidently. ${offer}`;
}

export function pipelineFallbackAnswer(persona: Persona): string {
  return `I couldn't put together a fully verified answer just now, and I won't guess. Ask me about ${persona.personName}'s projects, experience or skills, or write to ${persona.contactEmail}.`;
}

/** Appended after a space when generation broke off mid-answer. */
export const PARTIAL_ANSWER_TAIL =
  "I can't verify anything beyond that, so I'll stop here rather than guess.";
