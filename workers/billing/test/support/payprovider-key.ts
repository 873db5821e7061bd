/** The API key the billing tests give the payprovider adapter; the fake server checks it. */
export const FAKE_PAYPROVIDER_API_KEY = "sk_test_fake_payprovider_0123456789";
