import type { InstanceOfferWithAvailability } from '@dstack/core';
import { type Colors, createColors } from './colors.js';
import { formatPrice, formatResources } from './format.js';
import { formatTable } from './table.js';

const OFFER_COLUMNS = ['#', 'BACKEND', 'REGION', 'RESOURCES', 'INSTANCE TYPE', 'PRICE', 'AVAILABILITY'];

/**
 * The offers table: `# BACKEND REGION RESOURCES INSTANCE TYPE PRICE AVAILABILITY`, the first
 * `shown` offers, then `and N more` when the server has more than were printed.
 */
export function formatOffersTable(
  offers: readonly InstanceOfferWithAvailability[],
  totalOffers: number,
  options: { shown?: number; colors?: Colors } = {},
): string {
  const colors = options.colors ?? createColors(false);
  const shown = offers.slice(0, options.shown ?? offers.length);
  const rows = shown.map((offer, index) => [
    String(index + 1),
    offer.backend,
    offer.region,
    formatResources(offer.instance.resources),
    offer.instance.name,
    formatPrice(offer.price),
    offer.availability.replaceAll('_', ' '),
  ]);
  const more = Math.max(totalOffers, offers.length) - shown.length;
  return (
    formatTable(OFFER_COLUMNS, rows, { styleHeader: colors.bold }) +
    (more > 0 ? colors.dim(`  and ${more} more\n`) : '')
  );
}
