/**
 * The containers Vast.ai rentals run: the toolkit's Docker rental containers
 * (`hosts/docker-rental-containers.ts`) labelled `dev.dstack.vastai-rental`, on the network
 * `dstack-vastai-rentals`.
 */
import {
  DockerRentalContainers,
  type RentalContainerSpec,
  RentalContainerStartError,
  type RentalContainers,
  type RentalPortMap,
} from '../hosts/docker-rental-containers.js';

/** On every rental container: `docker ps --filter label=dev.dstack.vastai-rental` lists them all. */
export const VASTAI_RENTAL_LABEL = 'dev.dstack.vastai-rental';
/** The contract (instance) id a container runs. */
export const VASTAI_RENTAL_CONTRACT_LABEL = `${VASTAI_RENTAL_LABEL}.contract`;

/** The bridge network the rental containers share by default. */
export const DEFAULT_VASTAI_RENTAL_NETWORK = 'dstack-vastai-rentals';

/** What a rental's container runs (`rentalId`: the contract id). */
export type VastaiContainerSpec = RentalContainerSpec;
/** Vast.ai's `ports` of a running instance: `{"10022/tcp": [{"HostIp": "127.0.0.1", "HostPort": "49153"}]}`. */
export type VastaiPortMap = RentalPortMap;
/** What the instances need from the machine their rentals run on. */
export type VastaiContainers = RentalContainers;
export { RentalContainerStartError as VastaiContainerStartError };

export interface DockerVastaiContainersOptions {
  /** The bridge network; made on first use when missing. Default `dstack-vastai-rentals`. */
  network?: string;
}

export class DockerVastaiContainers extends DockerRentalContainers {
  constructor(options: DockerVastaiContainersOptions = {}) {
    super({
      kind: 'vastai-rental',
      namePrefix: 'vastai',
      network: options.network ?? DEFAULT_VASTAI_RENTAL_NETWORK,
    });
  }
}
