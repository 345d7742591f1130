import type { InstanceOfferWithAvailability, Project } from '@dstack/core';
import { type FormEvent, useState } from 'react';
import { projectPath } from '../api';
import { LoadState, Table } from '../components';
import { formatCost } from '../format';
import { useSession } from '../session';
import { useData } from '../use-data';

interface OffersAnswer {
  offers: InstanceOfferWithAvailability[];
  total_offers: number;
  warnings: string[];
}

const MAX_OFFERS = 50;

function describeResources(offer: InstanceOfferWithAvailability): string {
  const { cpus, memory_mib, gpus, disk } = offer.instance.resources;
  const parts = [`${cpus}xCPU`, `${Math.round(memory_mib / 1024)}GB`];
  const [gpu] = gpus;
  if (gpu) parts.push(`${gpus.length}x${gpu.name} (${Math.round(gpu.memory_mib / 1024)}GB)`);
  parts.push(`${Math.round(disk.size_mib / 1024)}GB disk`);
  return parts.join(', ');
}

/**
 * Offers for a set of requirements, as `dstack offer`: the requirements go to the server in a
 * configuration's own grammar (`A100:80GB:2`, `8..`, `32GB..`), so its errors name the field.
 */
export function OffersPage() {
  const { api } = useSession();
  const projects = useData(() => api.post<Project[]>('/api/projects/list'), [api]);
  const [project, setProject] = useState('');
  const [gpu, setGpu] = useState('');
  const [cpu, setCpu] = useState('');
  const [memory, setMemory] = useState('');
  const [spotPolicy, setSpotPolicy] = useState('auto');
  const [maxPrice, setMaxPrice] = useState('');
  const [answer, setAnswer] = useState<OffersAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const chosenProject = project || projects.data?.[0]?.project_name || '';

  const search = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const resources: Record<string, string> = {};
    if (gpu.trim()) resources.gpu = gpu.trim();
    if (cpu.trim()) resources.cpu = cpu.trim();
    if (memory.trim()) resources.memory = memory.trim();
    const configuration: Record<string, unknown> = { type: 'task', resources, spot_policy: spotPolicy };
    if (maxPrice.trim()) configuration.max_price = Number(maxPrice);
    try {
      setAnswer(
        await api.post<OffersAnswer>(projectPath(chosenProject, 'offers/list'), {
          configuration,
          max_offers: MAX_OFFERS,
        }),
      );
    } catch (caught) {
      setAnswer(null);
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <h1>Offers</h1>
      <LoadState error={projects.error} loading={!projects.data} />
      <form className="filters" onSubmit={search}>
        <label>
          Project
          <select value={chosenProject} onChange={(event) => setProject(event.target.value)}>
            {projects.data?.map((listed) => (
              <option key={listed.project_id}>{listed.project_name}</option>
            ))}
          </select>
        </label>
        <label>
          GPU
          <input
            name="gpu"
            placeholder="A100:80GB:2"
            value={gpu}
            onChange={(event) => setGpu(event.target.value)}
          />
        </label>
        <label>
          CPU
          <input name="cpu" placeholder="8.." value={cpu} onChange={(event) => setCpu(event.target.value)} />
        </label>
        <label>
          Memory
          <input
            name="memory"
            placeholder="32GB.."
            value={memory}
            onChange={(event) => setMemory(event.target.value)}
          />
        </label>
        <label>
          Spot
          <select value={spotPolicy} onChange={(event) => setSpotPolicy(event.target.value)}>
            <option value="auto">auto</option>
            <option value="spot">spot</option>
            <option value="on-demand">on-demand</option>
          </select>
        </label>
        <label>
          Max price/h
          <input
            name="max_price"
            inputMode="decimal"
            value={maxPrice}
            onChange={(event) => setMaxPrice(event.target.value)}
          />
        </label>
        <button type="submit" disabled={busy || chosenProject === ''}>
          {busy ? 'Searching…' : 'Search'}
        </button>
      </form>
      {error && <p className="error">{error}</p>}
      {answer && (
        <>
          <p className="muted" data-testid="offers-total">
            {answer.offers.length} of {answer.total_offers} offers, cheapest first
          </p>
          {answer.warnings.map((warning) => (
            <p key={warning} className="error">
              {warning}
            </p>
          ))}
          <Table
            head={['Backend', 'Region', 'Instance', 'Resources', 'Spot', 'Price/h', 'Availability']}
            empty="No offers match."
          >
            {answer.offers.map((offer, index) => (
              // Offers have no id: the same type can be offered in several regions and spot modes.
              <tr key={index}>
                <td>{offer.backend}</td>
                <td>{offer.region}</td>
                <td>{offer.instance.name}</td>
                <td>{describeResources(offer)}</td>
                <td>{offer.instance.resources.spot ? 'spot' : 'on-demand'}</td>
                <td>{formatCost(offer.price)}</td>
                <td>{offer.availability}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </section>
  );
}
