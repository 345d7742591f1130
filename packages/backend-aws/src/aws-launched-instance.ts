/**
 * EC2 launches are idempotent by `ClientToken`: the live instance an earlier launch with the same
 * token made is found rather than launched again (instances and gateway instances alike).
 */
import { DescribeInstancesCommand, type EC2Client, type Instance } from '@aws-sdk/client-ec2';

/** The pending or running instance a launch with `clientToken` made, if any. */
export async function findLaunchedInstance(
  ec2: EC2Client,
  clientToken: string,
): Promise<Instance | undefined> {
  const answer = await ec2.send(
    new DescribeInstancesCommand({
      Filters: [
        { Name: 'client-token', Values: [clientToken] },
        { Name: 'instance-state-name', Values: ['pending', 'running'] },
      ],
    }),
  );
  return answer.Reservations?.flatMap((reservation) => reservation.Instances ?? [])[0];
}
