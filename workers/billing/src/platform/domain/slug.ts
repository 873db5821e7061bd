import { randomToken } from "./secrets.ts";

export const SLUG_PATTERN = /^[a-z][a-z0-9-]*$/;
export const SLUG_MIN = 3;
export const SLUG_MAX = 100;

/**
 * A slug for a tenant whose creator did not choose one: lower-case ASCII
 * words joined by hyphens, starting with a letter, 3 to 100 characters.
 */
export function slugFromName(name: string): string {
  let slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  if (!/^[a-z]/.test(slug)) slug = `t-${slug}`.replace(/-+$/, "");
  if (slug.length < SLUG_MIN) slug = `${slug}-org`;
  return slug.slice(0, SLUG_MAX).replace(/-+$/, "");
}

/**
 * A generated slug that collided: the same slug with a short random suffix,
 * still within SLUG_MAX and SLUG_PATTERN.
 */
export function withRandomSuffix(slug: string): string {
  const suffix = randomToken(6)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "x");
  return `${slug.slice(0, 90)}-${suffix}`;
}
