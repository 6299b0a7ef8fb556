//! One table from OpenCL error codes to their names.
//!
//! Every message in clmulti shows both: `CL_OUT_OF_HOST_MEMORY (-6)`.

use std::fmt;

/// An OpenCL status code, displayed as `NAME (code)`.
///
/// ```
/// use clmulti_probe::ClCode;
/// assert_eq!(ClCode(-6).to_string(), "CL_OUT_OF_HOST_MEMORY (-6)");
/// assert_eq!(ClCode(-12345).to_string(), "UNKNOWN_OPENCL_ERROR (-12345)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClCode(pub i32);

impl ClCode {
    /// `CL_SUCCESS (0)`
    pub const SUCCESS: ClCode = ClCode(0);
    /// `CL_DEVICE_NOT_FOUND (-1)`
    pub const DEVICE_NOT_FOUND: ClCode = ClCode(-1);
    /// `CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)`
    pub const MEM_OBJECT_ALLOCATION_FAILURE: ClCode = ClCode(-4);
    /// `CL_OUT_OF_RESOURCES (-5)`
    pub const OUT_OF_RESOURCES: ClCode = ClCode(-5);
    /// `CL_OUT_OF_HOST_MEMORY (-6)`: what Intel's runtime returns for any failed allocation.
    pub const OUT_OF_HOST_MEMORY: ClCode = ClCode(-6);
    /// `CL_DEVICE_PARTITION_FAILED (-18)`
    pub const DEVICE_PARTITION_FAILED: ClCode = ClCode(-18);
    /// `CL_INVALID_VALUE (-30)`
    pub const INVALID_VALUE: ClCode = ClCode(-30);
    /// `CL_INVALID_PLATFORM (-32)`
    pub const INVALID_PLATFORM: ClCode = ClCode(-32);
    /// `CL_INVALID_DEVICE (-33)`
    pub const INVALID_DEVICE: ClCode = ClCode(-33);
    /// `CL_INVALID_MEM_OBJECT (-38)`
    pub const INVALID_MEM_OBJECT: ClCode = ClCode(-38);
    /// `CL_INVALID_BUFFER_SIZE (-61)`
    pub const INVALID_BUFFER_SIZE: ClCode = ClCode(-61);
    /// `CL_INVALID_PROPERTY (-64)`
    pub const INVALID_PROPERTY: ClCode = ClCode(-64);
    /// `CL_INVALID_DEVICE_PARTITION_COUNT (-68)`
    pub const INVALID_DEVICE_PARTITION_COUNT: ClCode = ClCode(-68);
    /// `CL_PLATFORM_NOT_FOUND_KHR (-1001)`: the ICD loader found no runtime it could load.
    pub const PLATFORM_NOT_FOUND_KHR: ClCode = ClCode(-1001);

    /// The symbolic name, or `UNKNOWN_OPENCL_ERROR` for codes not in the table.
    pub fn name(self) -> &'static str {
        error_name(self.0).unwrap_or("UNKNOWN_OPENCL_ERROR")
    }
}

impl fmt::Display for ClCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl std::error::Error for ClCode {}

/// The name of an OpenCL status code (core 3.0, KHR and common vendor extensions).
pub fn error_name(code: i32) -> Option<&'static str> {
    ERROR_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// Every known code with its name: core codes from 0 down, then extension codes.
pub const ERROR_NAMES: &[(i32, &str)] = &[
    (0, "CL_SUCCESS"),
    (-1, "CL_DEVICE_NOT_FOUND"),
    (-2, "CL_DEVICE_NOT_AVAILABLE"),
    (-3, "CL_COMPILER_NOT_AVAILABLE"),
    (-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"),
    (-5, "CL_OUT_OF_RESOURCES"),
    (-6, "CL_OUT_OF_HOST_MEMORY"),
    (-7, "CL_PROFILING_INFO_NOT_AVAILABLE"),
    (-8, "CL_MEM_COPY_OVERLAP"),
    (-9, "CL_IMAGE_FORMAT_MISMATCH"),
    (-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"),
    (-11, "CL_BUILD_PROGRAM_FAILURE"),
    (-12, "CL_MAP_FAILURE"),
    (-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"),
    (-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"),
    (-15, "CL_COMPILE_PROGRAM_FAILURE"),
    (-16, "CL_LINKER_NOT_AVAILABLE"),
    (-17, "CL_LINK_PROGRAM_FAILURE"),
    (-18, "CL_DEVICE_PARTITION_FAILED"),
    (-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"),
    (-30, "CL_INVALID_VALUE"),
    (-31, "CL_INVALID_DEVICE_TYPE"),
    (-32, "CL_INVALID_PLATFORM"),
    (-33, "CL_INVALID_DEVICE"),
    (-34, "CL_INVALID_CONTEXT"),
    (-35, "CL_INVALID_QUEUE_PROPERTIES"),
    (-36, "CL_INVALID_COMMAND_QUEUE"),
    (-37, "CL_INVALID_HOST_PTR"),
    (-38, "CL_INVALID_MEM_OBJECT"),
    (-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"),
    (-40, "CL_INVALID_IMAGE_SIZE"),
    (-41, "CL_INVALID_SAMPLER"),
    (-42, "CL_INVALID_BINARY"),
    (-43, "CL_INVALID_BUILD_OPTIONS"),
    (-44, "CL_INVALID_PROGRAM"),
    (-45, "CL_INVALID_PROGRAM_EXECUTABLE"),
    (-46, "CL_INVALID_KERNEL_NAME"),
    (-47, "CL_INVALID_KERNEL_DEFINITION"),
    (-48, "CL_INVALID_KERNEL"),
    (-49, "CL_INVALID_ARG_INDEX"),
    (-50, "CL_INVALID_ARG_VALUE"),
    (-51, "CL_INVALID_ARG_SIZE"),
    (-52, "CL_INVALID_KERNEL_ARGS"),
    (-53, "CL_INVALID_WORK_DIMENSION"),
    (-54, "CL_INVALID_WORK_GROUP_SIZE"),
    (-55, "CL_INVALID_WORK_ITEM_SIZE"),
    (-56, "CL_INVALID_GLOBAL_OFFSET"),
    (-57, "CL_INVALID_EVENT_WAIT_LIST"),
    (-58, "CL_INVALID_EVENT"),
    (-59, "CL_INVALID_OPERATION"),
    (-60, "CL_INVALID_GL_OBJECT"),
    (-61, "CL_INVALID_BUFFER_SIZE"),
    (-62, "CL_INVALID_MIP_LEVEL"),
    (-63, "CL_INVALID_GLOBAL_WORK_SIZE"),
    (-64, "CL_INVALID_PROPERTY"),
    (-65, "CL_INVALID_IMAGE_DESCRIPTOR"),
    (-66, "CL_INVALID_COMPILER_OPTIONS"),
    (-67, "CL_INVALID_LINKER_OPTIONS"),
    (-68, "CL_INVALID_DEVICE_PARTITION_COUNT"),
    (-69, "CL_INVALID_PIPE_SIZE"),
    (-70, "CL_INVALID_DEVICE_QUEUE"),
    (-71, "CL_INVALID_SPEC_ID"),
    (-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"),
    (-1000, "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR"),
    (-1001, "CL_PLATFORM_NOT_FOUND_KHR"),
    (-1002, "CL_INVALID_D3D10_DEVICE_KHR"),
    (-1003, "CL_INVALID_D3D10_RESOURCE_KHR"),
    (-1004, "CL_D3D10_RESOURCE_ALREADY_ACQUIRED_KHR"),
    (-1005, "CL_D3D10_RESOURCE_NOT_ACQUIRED_KHR"),
    (-1057, "CL_DEVICE_PARTITION_FAILED_EXT"),
    (-1058, "CL_INVALID_PARTITION_COUNT_EXT"),
    (-1059, "CL_INVALID_PARTITION_NAME_EXT"),
    (-1092, "CL_EGL_RESOURCE_NOT_ACQUIRED_KHR"),
    (-1093, "CL_INVALID_EGL_OBJECT_KHR"),
    (-1094, "CL_INVALID_ACCELERATOR_INTEL"),
    (-1095, "CL_INVALID_ACCELERATOR_TYPE_INTEL"),
    (-1096, "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL"),
    (-1097, "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL"),
    (-1098, "CL_INVALID_VA_API_MEDIA_ADAPTER_INTEL"),
    (-1099, "CL_INVALID_VA_API_MEDIA_SURFACE_INTEL"),
    (-1100, "CL_VA_API_MEDIA_SURFACE_ALREADY_ACQUIRED_INTEL"),
    (-1101, "CL_VA_API_MEDIA_SURFACE_NOT_ACQUIRED_INTEL"),
    (-1138, "CL_INVALID_COMMAND_BUFFER_KHR"),
    (-1139, "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR"),
    (-1140, "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR"),
    (-1143, "CL_INVALID_SEMAPHORE_KHR"),
    (-1144, "CL_INVALID_MUTABLE_COMMAND_KHR"),
    (-9999, "CL_NV_ILLEGAL_BUFFER_ACTION"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique() {
        let mut codes: Vec<i32> = ERROR_NAMES.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ERROR_NAMES.len());
    }

    #[test]
    fn codes_descend() {
        assert!(ERROR_NAMES.windows(2).all(|w| w[0].0 > w[1].0));
    }

    #[test]
    fn named_constants_match_the_table() {
        assert_eq!(ClCode::OUT_OF_HOST_MEMORY.name(), "CL_OUT_OF_HOST_MEMORY");
        assert_eq!(ClCode::INVALID_VALUE.name(), "CL_INVALID_VALUE");
        assert_eq!(
            ClCode::MEM_OBJECT_ALLOCATION_FAILURE.name(),
            "CL_MEM_OBJECT_ALLOCATION_FAILURE"
        );
    }

    #[test]
    fn names_show_with_codes() {
        assert_eq!(ClCode(-61).to_string(), "CL_INVALID_BUFFER_SIZE (-61)");
        assert_eq!(ClCode(-1001).name(), "CL_PLATFORM_NOT_FOUND_KHR");
        assert_eq!(ClCode(12345).name(), "UNKNOWN_OPENCL_ERROR");
    }
}
