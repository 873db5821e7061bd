import type { TestProject } from "vitest/node";
import { fakePayProvider } from "./fake-payprovider.ts";
import { FAKE_PAYPROVIDER_API_KEY } from "./payprovider-key.ts";

declare module "vitest" {
  export interface ProvidedContext {
    payproviderUrl: string;
  }
}

/** Starts the Stripe-wire-format server the payprovider tests charge through. */
export default async function setup(project: TestProject) {
  const server = fakePayProvider(FAKE_PAYPROVIDER_API_KEY);
  project.provide("payproviderUrl", await server.start());
  return () => server.stop();
}
