/**
 * dstack's GPU names for RunPod's GPU types, as gpuhunt's RunPod provider maps their display
 * names: `RTX 4090` → `RTX4090`, `RTX A6000` → `A6000`, `A100 PCIe` → `A100`, `H100 NVL` →
 * `H100NVL`; AMD's by the known accelerators (`MI300X`). Other vendors are not offered.
 */
import { type AcceleratorVendor, findAccelerators } from '@dstack/catalog';

/** gpuhunt's `AcceleratorVendor.cast` of RunPod's `manufacturer` (`Nvidia`, `AMD`); null for others. */
export function runpodGpuVendor(manufacturer: string): AcceleratorVendor | null {
  const vendor = manufacturer.trim().toLowerCase();
  return vendor === 'nvidia' || vendor === 'amd' ? vendor : null;
}

/** gpuhunt's `_get_nvidia_gpu_name`; null for a name it does not map. */
function nvidiaGpuName(name: string): string | null {
  if (name.includes('B200')) return 'B200';
  if (name.includes('V100')) return 'V100';
  if (name === 'H100 NVL') return 'H100NVL';
  if (name.includes('H200 NVL')) return 'H200NVL';
  if (/^[ALH]/.test(name)) return name.split(' ')[0] ?? null;
  // Python's lstrip("RTX "): every leading R, T, X and space.
  if (name.startsWith('RTX A')) return name.replace(/^[RTX ]+/, '').replaceAll(' ', '');
  if (name.startsWith('RTX')) return name.replaceAll(' ', '');
  return null;
}

/** dstack's name of a RunPod GPU type, or null when gpuhunt would skip it. */
export function runpodGpuName(vendor: AcceleratorVendor, displayName: string): string | null {
  if (vendor === 'nvidia') return nvidiaGpuName(displayName);
  if (vendor === 'amd') return findAccelerators({ names: [displayName], vendors: ['amd'] })[0]?.name ?? null;
  return null;
}
