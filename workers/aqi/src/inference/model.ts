/**
 * Whether an AQI model is available to this isolate. No model artifact is
 * bundled yet (the training pipeline lands with the AQI issue), so the
 * service reports itself degraded rather than pretending to predict.
 */
export async function modelStatus(): Promise<{ loaded: boolean }> {
  return { loaded: false };
}
