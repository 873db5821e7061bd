export interface PasswordResetMail {
  to: string;
  token: string;
  expiresAt: string;
}

/** Where outgoing account mail goes; a provider-backed implementation plugs in here. */
export interface MailSender {
  sendPasswordReset(mail: PasswordResetMail): Promise<void>;
}

/** `jane.doe@example.com` -> `j***@example.com`: enough to correlate, not to harvest. */
export function redactEmail(email: string): string {
  const at = email.lastIndexOf("@");
  if (at < 1) return "***";
  return `${email[0]}***${email.slice(at)}`;
}

/**
 * The local mail sender: logs that a reset mail would be sent, with the
 * address redacted and without the token (a log line is not a secret store).
 */
export class LoggingMailSender implements MailSender {
  async sendPasswordReset(mail: PasswordResetMail): Promise<void> {
    console.log(
      JSON.stringify({
        level: "info",
        msg: "password reset mail",
        to: redactEmail(mail.to),
        token: "[REDACTED]",
        expiresAt: mail.expiresAt,
      }),
    );
  }
}
