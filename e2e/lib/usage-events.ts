/** Events of the demo catalog's METERED feature, amounts 1, 2, 3 in turn, each with a fresh eventId. */
export function apiCallEvents(count: number) {
  return Array.from({ length: count }, (_, i) => ({
    eventId: crypto.randomUUID(),
    feature: "api_calls",
    amount: (i % 3) + 1,
    timestamp: new Date().toISOString(),
  }));
}
