/** The balance-alert email, plain text; pure so its wording is tested without a mail server. */

/** Exact USD text of a nano-USD amount, at least two decimals: 5.00, 0.000123456, -1.50. */
export function formatUsd(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  const fraction = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${sign}${abs / 1_000_000_000n}.${fraction}`;
}

export interface AlertMailInput {
  readonly alertId: string;
  readonly userId: string;
  readonly thresholdNano: bigint;
  readonly creditsNano: bigint;
  readonly at: Date;
}

export function alertMail(input: AlertMailInput): { subject: string; body: string } {
  const threshold = formatUsd(input.thresholdNano);
  const credits = formatUsd(input.creditsNano);
  return {
    subject: `Balance alert: credits of ${input.userId} fell below ${threshold} USD`,
    body: [
      `The credits of account ${input.userId} fell below your alert threshold.`,
      '',
      `Account:    ${input.userId}`,
      `Threshold:  ${threshold} USD`,
      `Credits:    ${credits} USD (at ${input.at.toISOString()})`,
      `Alert id:   ${input.alertId}`,
      '',
      'This alert mails once per crossing. It re-arms when the credits are back at or above the',
      'threshold (a top-up or a coupon); the next drop below it mails again.',
      '',
    ].join('\n'),
  };
}
