// Vite's `?raw` suffix (vitest runs the tests through Vite): the file's text,
// unparsed, e.g. the committed OpenAPI document in openapi-snapshot.test.ts.
declare module "*?raw" {
  const text: string;
  export default text;
}
