{{- define "budcluster.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "budcluster.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; `component` (api, worker, migration) is added where it applies. */}}
{{- define "budcluster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "budcluster.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: budcluster
{{- end -}}

{{- define "budcluster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "budcluster.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "budcluster.componentSelector" -}}
{{ include "budcluster.selectorLabels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "budcluster.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "budcluster.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "budcluster.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Whether the chart keeps any secret value in a Secret of its own. */}}
{{- define "budcluster.ownsSecret" -}}
{{- $v := .Values -}}
{{- if or (and $v.database.url (not $v.database.existingSecret)) (and $v.redis.url (not $v.redis.existingSecret)) (and $v.tokenPepper.value (not $v.tokenPepper.existingSecret)) (and $v.keyring.keysPem (not $v.keyring.existingSecret)) -}}
true
{{- end -}}
{{- end -}}

{{/* The data of the chart's Secret: the values given inline (an existing Secret wins). */}}
{{- define "budcluster.secretData" -}}
{{- $v := .Values -}}
{{- if and $v.database.url (not $v.database.existingSecret) }}
database-url: {{ $v.database.url | b64enc | quote }}
{{- end }}
{{- if and $v.redis.url (not $v.redis.existingSecret) }}
redis-url: {{ $v.redis.url | b64enc | quote }}
{{- end }}
{{- if and $v.tokenPepper.value (not $v.tokenPepper.existingSecret) }}
token-pepper: {{ $v.tokenPepper.value | b64enc | quote }}
{{- end }}
{{- if and $v.keyring.keysPem (not $v.keyring.existingSecret) }}
keys-pem: {{ $v.keyring.keysPem | b64enc | quote }}
{{- end }}
{{- end -}}

{{/*
A secretKeyRef for one secret setting: the existing Secret's key, else the chart's Secret
(`secretName`: the release's, or the migration hook's copy of it).
*/}}
{{- define "budcluster.secretEnv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      {{- if .existing }}
      name: {{ .existing | quote }}
      key: {{ .existingKey | quote }}
      {{- else }}
      name: {{ .secretName | quote }}
      key: {{ .key | quote }}
      {{- end }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/*
The environment of every container (API, worker, migration): production mode's fixed settings,
`settings`, the secrets by reference, the traces' collector, then `extraEnv` and the component's
own `extraEnv`.
Call with (dict "root" $ "secretName" <name> "extra" <component extraEnv>).
*/}}
{{- define "budcluster.env" -}}
{{- $v := .root.Values -}}
{{- $fixed := dict "BUDCLUSTER_HOST" "0.0.0.0" "BUDCLUSTER_PORT" "8000" "BUDCLUSTER_TASKS" "arq" "BUDCLUSTER_EVENTS" "redis" "BUDCLUSTER_CREATE_DEFAULTS" "false" "BUDCLUSTER_AUTO_MIGRATE" "false" "BUDCLUSTER_DATA_DIR" "/tmp/budcluster" -}}
{{- range $name := keys $fixed | sortAlpha }}
- name: {{ $name }}
  value: {{ get $fixed $name | quote }}
{{- end }}
{{- range $name := keys ($v.settings | default dict) | sortAlpha }}
- name: {{ $name }}
  value: {{ get $v.settings $name | toString | quote }}
{{- end }}
{{ include "budcluster.secretEnv" (dict "env" "BUDCLUSTER_DATABASE_URL" "existing" $v.database.existingSecret "existingKey" $v.database.existingSecretKey "secretName" .secretName "key" "database-url") }}
{{ include "budcluster.secretEnv" (dict "env" "BUDCLUSTER_REDIS_URL" "existing" $v.redis.existingSecret "existingKey" $v.redis.existingSecretKey "secretName" .secretName "key" "redis-url") }}
{{ include "budcluster.secretEnv" (dict "env" "BUDCLUSTER_TOKEN_PEPPER" "existing" $v.tokenPepper.existingSecret "existingKey" $v.tokenPepper.existingSecretKey "secretName" .secretName "key" "token-pepper") }}
{{ include "budcluster.secretEnv" (dict "env" "BUDCLUSTER_KEYS_PEM" "existing" $v.keyring.existingSecret "existingKey" $v.keyring.keysPemKey "secretName" .secretName "key" "keys-pem") }}
{{- if $v.keyring.activeKey }}
- name: BUDCLUSTER_ACTIVE_KEY
  value: {{ $v.keyring.activeKey | quote }}
{{- else if $v.keyring.existingSecret }}
{{ include "budcluster.secretEnv" (dict "env" "BUDCLUSTER_ACTIVE_KEY" "existing" $v.keyring.existingSecret "existingKey" $v.keyring.activeKeyKey "optional" true) }}
{{- end }}
{{- with $v.tracing }}
{{- if .otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .otlpEndpoint | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | default "parentbased_always_on" | quote }}
{{- if .samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .samplerArg | toString | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* envFrom, the volume mount of /tmp, the security context and image: every container's. */}}
{{- define "budcluster.containerCommon" -}}
image: {{ include "budcluster.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
{{- with .Values.securityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.extraEnvFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
{{- end -}}

{{/*
The pod-level fields of every pod; call with (dict "root" $ "name" <api|worker|migration>
"component" <its values>). A topology spread constraint without a labelSelector gets the
component's pods.
*/}}
{{- define "budcluster.podCommon" -}}
{{- $v := .root.Values -}}
{{- $selector := include "budcluster.componentSelector" (dict "root" .root "name" .name) | fromYaml -}}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.component.nodeSelector | default $v.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.component.tolerations | default $v.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.component.affinity | default $v.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- range . }}
  {{- $constraint := deepCopy . }}
  {{- if not $constraint.labelSelector }}
  {{- $_ := set $constraint "labelSelector" (dict "matchLabels" $selector) }}
  {{- end }}
  - {{ toYaml $constraint | nindent 4 | trim }}
  {{- end }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      {{- with $v.tmpVolume.medium }}
      medium: {{ . }}
      {{- end }}
      {{- with $v.tmpVolume.sizeLimit }}
      sizeLimit: {{ . | quote }}
      {{- end }}
{{- end -}}

{{/* The container resources: the component's when given, else the chart-wide defaults. */}}
{{- define "budcluster.resources" -}}
{{- toYaml (.component.resources | default .root.Values.resources) -}}
{{- end -}}
