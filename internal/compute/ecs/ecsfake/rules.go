package ecsfake

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agoradev/agora/internal/fargate"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
)

// The rules ECS states in its model's documentation text, beyond what the
// shapes say (checkModel). Each quotes or paraphrases the sentence it comes
// from; the messages follow ECS's (ClientException for a definition or a
// request ECS cannot serve, InvalidParameterException for a parameter).

// nameRE is "Up to 255 letters (uppercase and lowercase), numbers,
// underscores, and hyphens are allowed" (family, container name).
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)

// minContainerMiB is "don't specify less than 6 MiB of memory for your
// containers" (Docker 20.10's minimum).
const minContainerMiB = 6

// checkFargateSize: "If you're using the Fargate launch type, ... you must
// use one of the following values" (RegisterTaskDefinitionRequest.cpu):
// the table of internal/fargate, which quotes the rest.
func checkFargateSize(cpu, mem *string) *apiError {
	c, err1 := strconv.ParseInt(aws.ToString(cpu), 10, 64)
	m, err2 := strconv.ParseInt(aws.ToString(mem), 10, 64)
	if err1 != nil || err2 != nil || !fargate.Valid(c, m) {
		return clientErr("No Fargate configuration exists for given values: %s CPU, %s memory. See the Amazon ECS documentation for the valid values.", aws.ToString(cpu), aws.ToString(mem))
	}
	return nil
}

// checkTags: "Maximum number of tags per resource - 50", "each tag key must
// be unique", "Do not use aws:, AWS:, or any upper or lowercase combination
// of such as a prefix for either keys or values".
func checkTags(tags []types.Tag) *apiError {
	if len(tags) > 50 {
		return invalidParam("Too many tags: %d. A resource can have at most 50 tags.", len(tags))
	}
	seen := map[string]bool{}
	for _, t := range tags {
		k, v := aws.ToString(t.Key), aws.ToString(t.Value)
		if seen[k] {
			return invalidParam("Duplicate tag key: %s. Each tag key must be unique.", k)
		}
		seen[k] = true
		if strings.HasPrefix(strings.ToLower(k), "aws:") || strings.HasPrefix(strings.ToLower(v), "aws:") {
			return invalidParam("Tag keys and values cannot start with the reserved prefix 'aws:': %s=%s", k, v)
		}
	}
	return nil
}

// checkContainerMemory: "If you specify both, memory must be greater than
// memoryReservation", and 6 MiB at least. memory and reservation are 0
// when unset.
func checkContainerMemory(container string, memory, reservation int32) *apiError {
	if memory != 0 && memory < minContainerMiB {
		return clientErr("Invalid 'memory' setting for container '%s'. The memory limit must be at least %d MiB.", container, minContainerMiB)
	}
	if memory != 0 && reservation != 0 && memory <= reservation {
		return clientErr("Invalid 'memory' setting for container '%s'. The memory limit (%d MiB) must be greater than memoryReservation (%d MiB).", container, memory, reservation)
	}
	return nil
}

// checkRegister is RegisterTaskDefinition's documented rules.
func checkRegister(in awsecs.RegisterTaskDefinitionInput) *apiError {
	if !nameRE.MatchString(aws.ToString(in.Family)) {
		return clientErr("Family contains invalid characters or is too long: %q. Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed.", aws.ToString(in.Family))
	}
	if len(in.ContainerDefinitions) == 0 {
		return clientErr("Container definitions are required.")
	}
	fargate := slices.Contains(in.RequiresCompatibilities, types.CompatibilityFargate)
	if fargate {
		if in.Cpu == nil || in.Memory == nil {
			return clientErr("Fargate requires that 'cpu' be defined at the task level.")
		}
		if err := checkFargateSize(in.Cpu, in.Memory); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	for _, c := range in.ContainerDefinitions {
		name := aws.ToString(c.Name)
		if !nameRE.MatchString(name) {
			return clientErr("Container name %q is invalid. Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed.", name)
		}
		if names[name] {
			return clientErr("Duplicate container name %s in the task definition.", name)
		}
		names[name] = true
		if aws.ToString(c.Image) == "" {
			return clientErr("Container.image should not be null or empty.")
		}
		if err := checkContainerMemory(name, aws.ToInt32(c.Memory), aws.ToInt32(c.MemoryReservation)); err != nil {
			return err
		}
		if !fargate && in.Memory == nil && aws.ToInt32(c.Memory) == 0 && aws.ToInt32(c.MemoryReservation) == 0 {
			return clientErr("Invalid setting for container '%s'. At least one of 'memory' or 'memoryReservation' must be specified.", name)
		}
		// "When you are specifying container secrets, you must also specify
		// a value for 'executionRoleArn'."
		if len(c.Secrets) > 0 && aws.ToString(in.ExecutionRoleArn) == "" {
			return clientErr("When you are specifying container secrets, you must also specify a value for 'executionRoleArn'.")
		}
		if c.LogConfiguration != nil && c.LogConfiguration.LogDriver == types.LogDriverAwslogs {
			for _, k := range []string{"awslogs-group", "awslogs-region"} {
				if c.LogConfiguration.Options[k] == "" {
					return clientErr("Log driver awslogs requires option %s for container '%s'.", k, name)
				}
			}
		}
	}
	return checkTags(in.Tags)
}

// checkRunTask is RunTask's documented rules that need no definition.
func checkRunTask(in awsecs.RunTaskInput) *apiError {
	// "You can specify up to 10 tasks for each call."
	if in.Count != nil && (*in.Count < 1 || *in.Count > 10) {
		return invalidParam("count must be between 1 and 10, not %d.", *in.Count)
	}
	// "A capacity provider strategy may contain a maximum of 6 capacity
	// providers."
	if len(in.CapacityProviderStrategy) > 6 {
		return invalidParam("A capacity provider strategy may contain at most 6 capacity providers, not %d.", len(in.CapacityProviderStrategy))
	}
	if in.LaunchType != "" && len(in.CapacityProviderStrategy) > 0 {
		return invalidParam("Specifying both a launch type and capacity provider strategy is not supported.")
	}
	// "startedBy: Up to 128 letters (uppercase and lowercase), numbers,
	// hyphens (-), forward slash (/), and underscores (_) are allowed."
	if sb := aws.ToString(in.StartedBy); sb != "" && !startedByRE.MatchString(sb) {
		return invalidParam("startedBy %q: up to 128 letters, numbers, hyphens, forward slashes and underscores are allowed.", sb)
	}
	return checkTags(in.Tags)
}

var startedByRE = regexp.MustCompile(`^[A-Za-z0-9_/-]{1,128}$`)

// checkOverrides is RunTask's rules against the definition it runs.
func checkOverrides(d *taskDef, ov *types.TaskOverride, fargate bool) *apiError {
	if ov == nil {
		return nil
	}
	byName := map[string]types.ContainerDefinition{}
	for _, c := range d.in.ContainerDefinitions {
		byName[aws.ToString(c.Name)] = c
	}
	for _, co := range ov.ContainerOverrides {
		name := aws.ToString(co.Name)
		cd, ok := byName[name]
		if !ok {
			return invalidParam("Override for container named %s is not a container in the TaskDefinition.", name)
		}
		mem, res := aws.ToInt32(cd.Memory), aws.ToInt32(cd.MemoryReservation)
		if co.Memory != nil {
			mem = *co.Memory
		}
		if co.MemoryReservation != nil {
			res = *co.MemoryReservation
		}
		if err := checkContainerMemory(name, mem, res); err != nil {
			return err
		}
	}
	if fargate && (ov.Cpu != nil || ov.Memory != nil) {
		cpu, mem := cmpOr(ov.Cpu, d.in.Cpu), cmpOr(ov.Memory, d.in.Memory)
		if err := checkFargateSize(cpu, mem); err != nil {
			return err
		}
	}
	return nil
}

func cmpOr(a, b *string) *string {
	if a != nil {
		return a
	}
	return b
}
